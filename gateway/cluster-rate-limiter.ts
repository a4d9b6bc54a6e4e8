/**
 * The per-workflow webhook rate across every gateway (docs/design.md "429"; README "Scaling out"): N gateways
 * together admit what one would, within a few per cent, without a NATS round trip per webhook.
 *
 * The algorithm is GCRA (the generic cell rate algorithm, a token bucket kept as one number): a workflow
 * with rate r has a "theoretical arrival time" TAT, the time at which its capacity is used up; a call at
 * `now` takes the slot `s = max(TAT, now)` and moves TAT on by `1/r`, and is admitted now when
 * `s + 1/r - now <= 1 s` (bursts of r, r per second on average: the bucket of rate-limiter.ts). The TAT
 * lives in the KV bucket `ldbox-rate-limits` (one key per workflow, compare-and-set on its revision), and a
 * gateway **leases** slots: one write takes a run of k consecutive slots (k ≈ r/10, more when calls are
 * waiting), which this gateway then hands out from memory. So one write serves ~r/10 webhooks, and what
 * N gateways admit together never exceeds the shared schedule: leased slots not used within a second of
 * their time are dropped (a gateway that went quiet cannot save them up for a burst).
 *
 * **Accept and throttle** (a workflow with `overRate: throttle`) uses the same schedule: a call over the rate
 * takes the next free slot however far ahead it is (up to LDBOX_THROTTLE_MAX_DELAY), is stored with that
 * slot's time as its `notBefore`, and the executor starts it then (src/nats/job-consumer.ts). The slots of
 * all gateways come from one TAT, so the executions start at the workflow's rate cluster-wide.
 *
 * Refusals are answered from memory too: after a write found no capacity, calls are refused (429 with
 * `Retry-After`) until the time that write said capacity comes back. Should the bucket not answer (NATS
 * away, an election), the call falls back to this gateway's own bucket (rate-limiter.ts): N gateways then
 * admit up to N × r, as before, and a throttled call is taken without a delay.
 *
 * Clocks: slots are wall-clock times (ms since the epoch); gateways on different hosts need synchronised
 * clocks (NTP) for the rate to hold to the second. Tests: test/cluster/cluster-rate-limit.test.ts.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { Logger } from '../src/logging/logger.js';
import { RateLimiter } from './rate-limiter.js';

/** The KV bucket of the shared schedules (one key per workflow: `{"tat": <ms since the epoch>}`). */
export const RATE_LIMITS_BUCKET = 'ldbox-rate-limits';

/** The burst a rate allows, as time: r calls at once (as rate-limiter.ts's bucket of capacity r). */
const BURST_MS = 1000;

/** The answer for one call: admitted (maybe to be run at `notBefore`, ms since the epoch) or refused. */
export type RateDecision = { ok: true; notBefore?: number } | { ok: false; retryAfterS: number; reason: 'rate' | 'throttle_full' };

const ADMIT: RateDecision = { ok: true };

export interface ClusterRateLimiterOptions {
  /** The `ldbox-rate-limits` bucket, once opened (undefined meanwhile: the local fallback answers). */
  kv: () => KV | undefined;
  /** The furthest ahead a throttled call may be scheduled; past it, 429 (LDBOX_THROTTLE_MAX_DELAY). */
  maxDelayMs: number;
  log: Logger;
  /** Wall clock, ms (tests). */
  now?: () => number;
}

interface Schedule {
  rate: number;
  step: number;
  /** The lease: slots `next`, `next + step`, … before `end`. */
  next: number;
  end: number;
  /** Refuse from memory until then (the last write found no capacity before it). */
  blockedUntil: number;
  /** The last TAT and revision this gateway wrote or read: the first guess of the next write. */
  known: { tat: number; revision: number } | undefined;
  /** The write in flight, which calls without a slot wait for. */
  claiming: Promise<ClaimOutcome> | undefined;
  /** Calls waiting for that write (the next write leases at least this many slots). */
  waiting: number;
}

type ClaimOutcome = 'leased' | 'blocked' | 'unavailable';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** See the module comment. One per gateway. */
export class ClusterRateLimiter {
  readonly #schedules = new Map<string, Schedule>();
  readonly #local: RateLimiter;
  readonly #now: () => number;
  #lastWarn = 0;

  constructor(private readonly opts: ClusterRateLimiterOptions) {
    this.#now = opts.now ?? Date.now;
    this.#local = new RateLimiter();
  }

  /**
   * Takes a slot of `key`'s schedule at `rate` per second (0 = no limit); `throttle` takes one ahead rather
   * than refusing. Answers from memory when this gateway holds a slot (or knows there is none), else after
   * one write to the bucket.
   */
  take(key: string, rate: number, throttle: boolean): RateDecision | Promise<RateDecision> {
    if (rate <= 0) return ADMIT;
    const s = this.#schedule(key, rate);
    return this.#fromLease(s, throttle, this.#now()) ?? this.#slow(key, s, throttle);
  }

  /** Forgets a key (its workflow was deleted). */
  forget(key: string): void {
    this.#schedules.delete(key);
    this.#local.forget(key);
  }

  #schedule(key: string, rate: number): Schedule {
    let s = this.#schedules.get(key);
    if (!s || s.rate !== rate) {
      s = { rate, step: 1000 / rate, next: 0, end: 0, blockedUntil: 0, known: undefined, claiming: undefined, waiting: 0 };
      this.#schedules.set(key, s);
    }
    return s;
  }

  /** A decision from the lease, or undefined when a write is needed. */
  #fromLease(s: Schedule, throttle: boolean, now: number): RateDecision | undefined {
    // Slots older than the burst window are dropped, not saved up.
    if (s.next < now - BURST_MS) s.next += Math.ceil((now - BURST_MS - s.next) / s.step) * s.step;
    if (s.next < s.end - 1e-6) {
      const due = s.next + s.step - BURST_MS; // when this slot's call may start
      if (due <= now) {
        s.next += s.step;
        return ADMIT;
      }
      if (throttle && due - now <= this.opts.maxDelayMs) {
        s.next += s.step;
        return { ok: true, notBefore: Math.ceil(due) };
      }
      if (!throttle) return refused(due - now, 'rate');
    }
    if (!throttle && s.blockedUntil > now) return refused(s.blockedUntil - now, 'rate');
    return undefined;
  }

  async #slow(key: string, s: Schedule, throttle: boolean): Promise<RateDecision> {
    for (let round = 0; round < 20; round++) {
      if (!s.claiming) {
        const want = Math.max(Math.ceil(s.rate / 10), s.waiting + 1);
        s.claiming = this.#claim(key, s, want, throttle).finally(() => (s.claiming = undefined));
      }
      s.waiting++;
      let outcome: ClaimOutcome;
      try {
        outcome = await s.claiming;
      } finally {
        s.waiting--;
      }
      const now = this.#now();
      if (outcome === 'unavailable') return this.#fallback(key, s.rate);
      const d = this.#fromLease(s, throttle, now);
      if (d) return d;
      if (outcome === 'blocked') return throttle ? refused(this.opts.maxDelayMs, 'throttle_full') : refused(Math.max(0, s.blockedUntil - now), 'rate');
      // Leased, but the slots went to calls that waited with this one: lease again.
    }
    return this.#fallback(key, s.rate);
  }

  /** Writes TAT forward by up to `want` slots (compare-and-set), and makes them this gateway's lease. */
  async #claim(key: string, s: Schedule, want: number, throttle: boolean): Promise<ClaimOutcome> {
    const kv = this.opts.kv();
    if (!kv) return 'unavailable';
    let known = s.known;
    for (let attempt = 0; attempt < 10; attempt++) {
      const now = this.#now();
      const start = Math.max(known?.tat ?? 0, now);
      // The last slot a call may take: now (+ the burst) when refusing, up to the max delay when throttling.
      const horizon = now + BURST_MS + (throttle ? this.opts.maxDelayMs : 0);
      const k = Math.min(want, Math.floor((horizon - start) / s.step + 1e-9));
      if (k <= 0) {
        s.known = known;
        s.blockedUntil = start + s.step - BURST_MS;
        return 'blocked';
      }
      const tat = start + k * s.step;
      const value = enc.encode(JSON.stringify({ tat }));
      try {
        const revision = known ? await kv.update(key, value, known.revision) : await kv.create(key, value);
        s.known = { tat, revision };
        s.next = start;
        s.end = tat;
        s.blockedUntil = 0;
        return 'leased';
      } catch (err) {
        if (!isWrongLastSequence(err) && !/exists/i.test((err as Error)?.message ?? '')) {
          this.#warn(err);
          s.known = undefined;
          return 'unavailable';
        }
      }
      // Another gateway wrote first: read its TAT and try again from there.
      try {
        const e = await kv.get(key);
        known = e && e.operation === 'PUT' ? { tat: readTat(e.value), revision: e.revision } : undefined;
      } catch (err) {
        this.#warn(err);
        return 'unavailable';
      }
    }
    return 'unavailable';
  }

  #fallback(key: string, rate: number): RateDecision {
    const wait = this.#local.take(key, rate);
    return wait === 0 ? ADMIT : { ok: false, retryAfterS: wait, reason: 'rate' };
  }

  #warn(err: unknown): void {
    const now = this.#now();
    if (now - this.#lastWarn < 10_000) return;
    this.#lastWarn = now;
    this.opts.log.warn(
      { err: (err as Error)?.message },
      'the shared rate-limit bucket did not answer: this gateway limits on its own meanwhile (N gateways admit up to N × the rate)',
    );
  }
}

function refused(waitMs: number, reason: 'rate' | 'throttle_full'): RateDecision {
  return { ok: false, retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)), reason };
}

function readTat(value: Uint8Array): number {
  try {
    const tat = (JSON.parse(dec.decode(value)) as { tat?: unknown }).tat;
    return typeof tat === 'number' && Number.isFinite(tat) ? tat : 0;
  } catch {
    return 0;
  }
}

function isWrongLastSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}
