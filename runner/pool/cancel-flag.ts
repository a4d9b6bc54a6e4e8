/**
 * A cancellation channel between the pool (main thread) and a task in a worker, in shared memory: the
 * state (int32 at 0), the thread id of the worker that took the task (int32 at 4), when it started
 * the task (float64 epoch ms at 8), the call's time limit once the worker knows it (float64 ms at 16)
 * and its request id (int32 length at 24, ASCII from 28; ids are at most 128 characters of
 * [A-Za-z0-9._:-] or a UUID), whether the call has started host work (int32 at 156: after that it
 * may have had effects outside, so it is never run again) and a hash of its code (int32 at 160, for
 * the hard-stop penalty, see hard-stop-penalty.ts). A wire call is decoded in the worker, so the watchdog and the answer for a
 * call whose worker had to be stopped learn its limit and id from here. Piscina's own abort terminates
 * a worker whose task is running; this lets a running sandbox stop cleanly instead, and a queued task be
 * skipped when a worker picks it up.
 *
 * States: QUEUED (in the pool's queue) → PLACED (stored as -p, p the placement's number, unique
 * among the pool's placements) → RUNNING → DONE; PLACED → QUEUED when the pool takes an unstarted call
 * back to place it elsewhere (see reclaim); QUEUED or PLACED → CANCELLED (skipped when a worker picks
 * it up); RUNNING → STOPPING (the sandbox stops at its next check) → DONE. Only the placement a flag
 * names can start the call: a worker that finds it placed otherwise — elsewhere, or again on itself
 * under a newer placement — drops that copy.
 */
import type { PenaltyKeys } from './hard-stop-penalty.js';
export const QUEUED = 0;
export const RUNNING = 1;
export const CANCELLED = 2;
export const DONE = 3;
export const STOPPING = 4;

/** True while a worker holds the call (running, or stopping after a cancel). */
export function isStarted(flag: Int32Array): boolean {
  const state = Atomics.load(flag, 0);
  return state === RUNNING || state === STOPPING;
}

const REQUEST_ID_AT = 28;
const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();
const REQUEST_ID_MAX = 128;

const HOST_WORK = (REQUEST_ID_AT + REQUEST_ID_MAX) / 4;
/** The call's hard-stop penalty keys (hard-stop-penalty.ts): its code's two words, then its tenant's. */
const PENALTY_KEYS = HOST_WORK + 1;

/** The bytes one flag takes (see flag-table.ts). */
export const FLAG_BYTES = (PENALTY_KEYS + 4) * 4;

/** Worker: records the call's time limit, request id and penalty keys once the request is decoded. */
export function describeTask(flag: Int32Array, timeoutMs: number, requestId: string, keys: PenaltyKeys): void {
  Atomics.store(flag, PENALTY_KEYS, keys.code[0]);
  Atomics.store(flag, PENALTY_KEYS + 1, keys.code[1]);
  Atomics.store(flag, PENALTY_KEYS + 2, keys.tenant[0]);
  Atomics.store(flag, PENALTY_KEYS + 3, keys.tenant[1]);
  new Float64Array(flag.buffer, flag.byteOffset + 16, 1)[0] = timeoutMs;
  const bytes = new Uint8Array(flag.buffer, flag.byteOffset + REQUEST_ID_AT, REQUEST_ID_MAX);
  const { written } = utf8Encoder.encodeInto(requestId.slice(0, REQUEST_ID_MAX), bytes);
  Atomics.store(flag, 6, written);
}

/** The call's time limit in ms, 0 until the worker has decoded the request. */
export function timeLimitOf(flag: Int32Array): number {
  return new Float64Array(flag.buffer, flag.byteOffset + 16, 1)[0]!;
}

/** The call's request id, '' until the worker has decoded the request. */
export function requestIdOf(flag: Int32Array): string {
  const length = Atomics.load(flag, 6);
  return utf8Decoder.decode(new Uint8Array(flag.buffer, flag.byteOffset + REQUEST_ID_AT, length).slice());
}

/** Whether the call has started host work (then it is not run again after losing its worker). */
export function startedHostWork(flag: Int32Array): boolean {
  return Atomics.load(flag, HOST_WORK) === 1;
}

/** The call's penalty keys (see describeTask), all 0 until the worker has decoded the request. */
export function penaltyKeysOf(flag: Int32Array): PenaltyKeys {
  return {
    code: [Atomics.load(flag, PENALTY_KEYS), Atomics.load(flag, PENALTY_KEYS + 1)],
    tenant: [Atomics.load(flag, PENALTY_KEYS + 2), Atomics.load(flag, PENALTY_KEYS + 3)],
  };
}

/** The thread id of the worker running the task, 0 before it started. */
export function runningOn(flag: Int32Array): number {
  return Atomics.load(flag, 1);
}

/** When the worker started the task (epoch ms), then when its guest code started (StartedTask.guestStarting); 0 before that. */
export function startedAt(flag: Int32Array): number {
  return new Float64Array(flag.buffer, flag.byteOffset + 8, 1)[0]!;
}

/** True while the call waits for a sandbox: in the pool's queue, or placed on a worker that has not started it. */
export function isWaiting(flag: Int32Array): boolean {
  return Atomics.load(flag, 0) <= QUEUED;
}

/** True when the call was cancelled before any worker took it. */
export function isCancelledWhileQueued(flag: Int32Array): boolean {
  return Atomics.load(flag, 0) === CANCELLED;
}

/** Main thread: marks a queued call as placed under `placement` (> 0); false when it was cancelled. */
export function markPlaced(flag: Int32Array, placement: number): boolean {
  return Atomics.compareExchange(flag, 0, QUEUED, -placement) === QUEUED;
}

/** Main thread: takes back a call placed under `placement` that has not started; false if it has. */
export function reclaim(flag: Int32Array, placement: number): boolean {
  return Atomics.compareExchange(flag, 0, -placement, QUEUED) === -placement;
}

/** Main thread: asks the task to stop, whether it is queued, placed or running. */
export function requestCancel(flag: Int32Array): void {
  for (;;) {
    const state = Atomics.load(flag, 0);
    if (state <= QUEUED) {
      if (Atomics.compareExchange(flag, 0, state, CANCELLED) === state) return;
      continue;
    }
    if (state === RUNNING && Atomics.compareExchange(flag, 0, RUNNING, STOPPING) !== RUNNING) continue;
    if (state === RUNNING) Atomics.notify(flag, 0);
    return;
  }
}

export interface StartedTask {
  readonly signal: AbortSignal;
  isCancelled(): boolean;
  hostWorkStarted(): void;
  /**
   * The sandbox is about to run the guest code: the hard-stop watchdog's clock starts again here, as the
   * sandbox's own time limit does. Getting a module ready first (a worker's first call instantiates and
   * snapshots one: seconds on a busy machine) is not the guest's time, and counted it made the watchdog
   * stop a worker whose call was still within its limit ("stuck in a built-in").
   */
  guestStarting(): void;
  finish(): void;
}

/**
 * Worker: marks the task (given to it under `placement`) running and returns a signal that aborts when the main thread cancels;
 * `'cancelled'` when it was cancelled before it started, `'elsewhere'` when the pool took it back to
 * place it on another worker (then this worker drops it without an answer). Call `finish()` when the
 * task ends: it wakes the pending wait so nothing outlives the task.
 */
export function startTask(flag: Int32Array, placement: number, threadId: number): StartedTask | 'cancelled' | 'elsewhere' {
  const was = Atomics.compareExchange(flag, 0, -placement, RUNNING);
  if (was !== -placement) return was === CANCELLED ? 'cancelled' : 'elsewhere';
  stampStart(flag);
  Atomics.store(flag, 1, threadId);
  return new RunningTask(flag);
}

/** Worker: the time {@link startedAt} reads, now. */
function stampStart(flag: Int32Array): void {
  new Float64Array(flag.buffer, flag.byteOffset + 8, 1)[0] = performance.timeOrigin + performance.now();
}

/**
 * A task this worker is running. Its signal (an AbortController and a waiter on the flag) is made only
 * when asked for: a call that never waits for host work is stopped through isCancelled alone, and most
 * calls never wait. A class rather than an object literal with a getter: V8 puts a literal's getter
 * pair in the old generation, which then keeps the call's objects alive past every scavenge.
 */
class RunningTask implements StartedTask {
  private controller: AbortController | undefined;

  constructor(private readonly flag: Int32Array) {}

  get signal(): AbortSignal {
    if (this.controller) return this.controller.signal;
    const flag = this.flag;
    const made = new AbortController();
    this.controller = made;
    const waiting = Atomics.waitAsync(flag, 0, RUNNING);
    if (waiting.async) {
      void waiting.value.then(() => {
        if (Atomics.load(flag, 0) === STOPPING) made.abort(new Error('cancelled by the caller'));
      });
    } else if (Atomics.load(flag, 0) === STOPPING) {
      made.abort(new Error('cancelled by the caller'));
    }
    return made.signal;
  }

  isCancelled(): boolean {
    return Atomics.load(this.flag, 0) === STOPPING;
  }

  hostWorkStarted(): void {
    Atomics.store(this.flag, HOST_WORK, 1);
  }

  guestStarting(): void {
    stampStart(this.flag);
  }

  finish(): void {
    // RUNNING or STOPPING → DONE; the notify ends this task's own pending wait, if it has one.
    Atomics.store(this.flag, 0, DONE);
    if (this.controller) Atomics.notify(this.flag, 0);
  }
}
