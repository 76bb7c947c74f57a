// An allocator robot: one task per invoice of a JSON file, created in chunks that are never created twice.
import { readFile } from 'node:fs/promises';
import { MateClient, createTasksInChunks } from '@queuemate/client';

interface Invoice {
  invoiceNo: string;
  amount: number;
}

const client = MateClient.fromEnv(process.env);
const invoices: Invoice[] = JSON.parse(await readFile(process.argv[2] ?? 'invoices.json', 'utf8'));

const { taskIds } = await createTasksInChunks<Invoice>(client, 'invoices', invoices, {
  chunkSize: 500,
  onProgress: ({ created, total }) => console.log(`${created} of ${total} created`),
});
console.log(`created ${taskIds.length} tasks`);
