/** Reading a task's rows straight from the store, for assertions. */
import { sql, type Kysely } from 'kysely';

export async function readTask(db: Kysely<any>, id: number): Promise<any> {
  const { rows } = await sql<any>`SELECT * FROM tasks WHERE id = ${id}`.execute(db);
  return rows[0];
}

export async function readComments(db: Kysely<any>, id: number): Promise<string[]> {
  const { rows } = await sql<{ body: string }>`SELECT body FROM task_comments WHERE task_id = ${id} ORDER BY id`.execute(db);
  return rows.map((r) => r.body);
}
