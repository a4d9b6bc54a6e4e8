/**
 * Per-workflow token buckets (docs/design.md "429"). A workflow with rate r may send r requests per second on
 * average and bursts of up to max(1, r); an empty bucket answers with the seconds until the next token.
 * In memory, per gateway: the fallback of cluster-rate-limiter.ts while the shared schedule in KV does not
 * answer (N gateways then admit up to N × r).
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; last: number; rate: number }>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Takes a token for `key` at `rate` per second; 0 when taken, else the seconds to wait (≥ 1). `rate` 0 = no limit. */
  take(key: string, rate: number): number {
    if (rate <= 0) return 0;
    const t = this.now();
    const capacity = Math.max(1, rate);
    let b = this.#buckets.get(key);
    if (!b || b.rate !== rate) {
      b = { tokens: capacity, last: t, rate };
      this.#buckets.set(key, b);
    } else {
      b.tokens = Math.min(capacity, b.tokens + ((t - b.last) / 1000) * rate);
      b.last = t;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / rate));
  }

  /** Forgets a key (its workflow was deleted). */
  forget(key: string): void {
    this.#buckets.delete(key);
  }

  get size(): number {
    return this.#buckets.size;
  }
}
