/**
 * Calls waiting for room on a worker, one FIFO per tenant (ExecuteRequest.tenant), taken in turn: a tenant
 * that floods the runner with calls waits behind its own calls, while another tenant's call waits behind at
 * most one call of each tenant with calls queued. Within a tenant the order is kept.
 * Test: test/runner/tenant-fairness.test.ts.
 */
export class FairQueue<T extends { readonly tenant: string }> {
  /** Each tenant's calls, the tenant whose turn it is first (a Map keeps insertion order). */
  readonly #queues = new Map<string, { items: T[]; head: number }>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    let q = this.#queues.get(item.tenant);
    if (q === undefined) this.#queues.set(item.tenant, (q = { items: [], head: 0 }));
    q.items.push(item);
    this.#size++;
  }

  /** Puts items back at the front of their tenants' queues, in their order (calls taken back from a worker). */
  returnToFront(items: readonly T[]): void {
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i]!;
      let q = this.#queues.get(item.tenant);
      if (q === undefined) this.#queues.set(item.tenant, (q = { items: [], head: 0 }));
      if (q.head > 0) q.items[--q.head] = item;
      else q.items.unshift(item);
      this.#size++;
    }
  }

  /** The next item in turn, left in the queue. */
  peek(): T | undefined {
    for (const q of this.#queues.values()) return q.items[q.head];
    return undefined;
  }

  /** Removes the item {@link peek} returned; its tenant's turn passes to the next tenant. */
  shift(): T | undefined {
    for (const [tenant, q] of this.#queues) {
      const item = q.items[q.head];
      q.items[q.head++] = undefined as unknown as T;
      this.#size--;
      this.#queues.delete(tenant);
      if (q.head < q.items.length) {
        if (q.head > 1024 && q.head * 2 > q.items.length) {
          q.items = q.items.slice(q.head);
          q.head = 0;
        }
        this.#queues.set(tenant, q);
      }
      return item;
    }
    return undefined;
  }

  /** Empties the queue, returning every item. */
  takeAll(): T[] {
    const all: T[] = [];
    for (const q of this.#queues.values()) for (let i = q.head; i < q.items.length; i++) all.push(q.items[i]!);
    this.#queues.clear();
    this.#size = 0;
    return all;
  }
}
