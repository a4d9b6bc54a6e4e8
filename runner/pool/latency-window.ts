/** The most recent N latencies, for percentiles in GetPoolStatus (cheap to record, sorted only on read). */
export class LatencyWindow {
  private readonly samples: Float64Array;
  private next = 0;
  private count = 0;

  constructor(size = 2048) {
    this.samples = new Float64Array(size);
  }

  record(ms: number): void {
    this.samples[this.next] = ms;
    this.next = (this.next + 1) % this.samples.length;
    if (this.count < this.samples.length) this.count++;
  }

  percentiles(): { p50: number; p90: number; p99: number; max: number; samples: number } {
    if (this.count === 0) return { p50: 0, p90: 0, p99: 0, max: 0, samples: 0 };
    const sorted = this.samples.slice(0, this.count).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[sorted.length - 1]!, samples: this.count };
  }
}
