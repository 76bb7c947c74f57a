/**
 * In-process "committed" notifications. A change is published after the transaction that made
 * it commits (src/db/tx.ts), never before, so a subscriber that reloads sees the new state.
 * Caches of this server process subscribe to drop what a change made stale; other server
 * processes learn of changes by their caches' short time-to-live.
 */

export type Change =
  /** tasks of these processes changed (created, taken, handed back, edited, moved, recovered) */
  | { kind: 'tasks'; tenantId: number; processIds: number[]; /** how many task rows changed */ rows?: number }
  /** a process's definition or state changed (settings, fields, rules, gate, Failure state); null: all of the tenant's */
  | { kind: 'process'; tenantId: number; processId: number | null }
  /** a Mate's credentials or state changed (password, disabled) */
  | { kind: 'mate'; tenantId: number; mateId: number }
  /** a user's credentials, role or state changed */
  | { kind: 'user'; tenantId: number; userId: number }
  /** the tenant's settings or API secrets changed */
  | { kind: 'tenant'; tenantId: number }
  /** token signing keys were created or rotated */
  | { kind: 'signingKeys' };

export type Subscriber = (change: Change) => void;

export class ChangeNotifier {
  private readonly subscribers = new Set<Subscriber>();

  /** Returns the function that ends the subscription. */
  subscribe(fn: Subscriber): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /**
   * Tells every subscriber, synchronously. A subscriber that throws does not keep the change from
   * the others (the change has committed; its publisher cannot undo it).
   */
  publish(change: Change): void {
    for (const fn of this.subscribers) {
      try {
        fn(change);
      } catch {
        // a cache that fails to drop an entry still expires it by age
      }
    }
  }
}
