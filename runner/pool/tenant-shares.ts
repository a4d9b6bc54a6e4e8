/**
 * The runner's capacity (LDBOX_RUNNER_MAX_INFLIGHT + LDBOX_POOL_MAX_QUEUE calls admitted at once) shared
 * between tenants (ExecuteRequest.tenant). A tenant alone may fill up to {@link SOFT_SHARE} of it (of a capacity
 * of at least {@link MIN_SHARED_CAPACITY}); past that,
 * a call is admitted only from a tenant that holds less than an even share among the tenants with calls in
 * flight plus one, so a newcomer always finds room while one tenant floods the runner with calls that wait.
 * Test: test/runner/tenant-fairness.test.ts.
 */
export class TenantShares {
  readonly #held = new Map<string, number>();
  #total = 0;

  constructor(private readonly capacity: number) {}

  /** Calls admitted now, all tenants together. */
  get total(): number {
    return this.#total;
  }

  /** Why the next call of `tenant` cannot be admitted now, or `undefined` when it can. */
  refusal(tenant: string): { full: boolean; message: string } | undefined {
    if (this.#total >= this.capacity) return { full: true, message: `the runner is full (${this.capacity} calls in flight or waiting to start)` };
    if (this.capacity < MIN_SHARED_CAPACITY || this.#total < Math.floor(this.capacity * SOFT_SHARE)) return undefined;
    const held = this.#held.get(tenant) ?? 0;
    const tenants = this.#held.size + (held === 0 ? 1 : 0);
    if (held < this.capacity / (tenants + 1)) return undefined;
    return {
      full: false,
      message: `this tenant has ${held} of the runner's ${this.#total} calls in flight, more than its share while the runner is nearly full (others keep room)`,
    };
  }

  add(tenant: string): void {
    this.#held.set(tenant, (this.#held.get(tenant) ?? 0) + 1);
    this.#total++;
  }

  remove(tenant: string): void {
    const held = (this.#held.get(tenant) ?? 0) - 1;
    if (held > 0) this.#held.set(tenant, held);
    else this.#held.delete(tenant);
    this.#total--;
  }
}

/** The share of the capacity one tenant may fill while no other tenant has a call in flight. */
export const SOFT_SHARE = 0.9;
/** Below this capacity (a runner configured for a handful of calls) no room is kept: first come, first served. */
export const MIN_SHARED_CAPACITY = 100;
