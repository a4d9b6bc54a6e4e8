/**
 * Bench-only helpers: latency samples, percentiles and bounded timing loops.
 */

/** Latency samples in milliseconds (grows as needed; a bounded loop bounds it). */
export class Samples {
  private data = new Float64Array(4096);
  count = 0;

  push(ms: number): void {
    if (this.count === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.count++] = ms;
  }

  /** Nearest-rank percentile (q in 0..1); NaN when empty. */
  percentile(q: number): number {
    if (this.count === 0) return Number.NaN;
    const sorted = this.data.slice(0, this.count).sort();
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  }

  mean(): number {
    if (this.count === 0) return Number.NaN;
    let s = 0;
    for (let i = 0; i < this.count; i++) s += this.data[i]!;
    return s / this.count;
  }
}

export interface LoopResult {
  calls: number;
  errors: number;
  firstError: string | undefined;
  elapsedMs: number;
  callsPerSec: number;
  latency: Samples;
}

/** Hard cap on iterations of any loop, so that a broken clock or a no-op call cannot spin forever. */
const MAX_CALLS = 5_000_000;

/** Runs a synchronous call back to back for `durationMs` on this thread. */
export function runSyncLoop(durationMs: number, fn: () => void): LoopResult {
  const latency = new Samples();
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const end = start + durationMs;
  let calls = 0;
  let now = start;
  while (now < end && calls + errors < MAX_CALLS) {
    const t0 = now;
    try {
      fn();
      now = performance.now();
      latency.push(now - t0);
      calls++;
    } catch (err) {
      now = performance.now();
      errors++;
      firstError ??= describe(err);
    }
  }
  const elapsedMs = performance.now() - start;
  return { calls, errors, firstError, elapsedMs, callsPerSec: (calls * 1000) / elapsedMs, latency };
}

/**
 * Runs `concurrency` loops of an async call for `durationMs`; each loop starts its next call when the
 * previous one settles. Calls in flight at the end are awaited and counted (elapsed time includes them).
 */
export async function runAsyncLoop(durationMs: number, concurrency: number, fn: () => Promise<void>): Promise<LoopResult> {
  const latency = new Samples();
  let errors = 0;
  let firstError: string | undefined;
  let calls = 0;
  const start = performance.now();
  const end = start + durationMs;
  const perLoopCap = Math.ceil(MAX_CALLS / concurrency);
  const loop = async () => {
    for (let i = 0; i < perLoopCap && performance.now() < end; i++) {
      const t0 = performance.now();
      try {
        await fn();
        latency.push(performance.now() - t0);
        calls++;
      } catch (err) {
        errors++;
        firstError ??= describe(err);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsedMs = performance.now() - start;
  return { calls, errors, firstError, elapsedMs, callsPerSec: (calls * 1000) / elapsedMs, latency };
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
