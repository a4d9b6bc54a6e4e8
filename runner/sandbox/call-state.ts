import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle } from 'quickjs-emscripten';
import type { BuiltinConfig, BuiltinContext } from '../builtins/index.js';
import { GuestFacingError } from './guest-facing-error.js';
import type { LogBuffer } from './log-buffer.js';
import type { Redact } from './redactor.js';

const CANCEL_POLL_MS = 50;

/**
 * The host-side state of one sandbox call: its deadline, cancellation, the host work the guest is
 * awaiting, and its logs. The run loop sleeps on `nextWake()` and is woken when host work lands, the
 * deadline passes, or the call is cancelled.
 *
 * Host work is cancelled through `signal` when the call ends for any reason, and a late completion is
 * dropped (`closed`): nothing calls into a context after its teardown began.
 */
export class CallState {
  readonly deferreds = new Set<QuickJSDeferredPromise>();
  private readonly abort = new AbortController();
  readonly signal = this.abort.signal;
  pendingHostWork = 0;
  cancelled = false;
  closed = false;
  hostFault: unknown;
  /** What the ld.* built-ins see of this call. */
  readonly builtins: BuiltinContext;
  private wake: (() => void) | undefined;

  constructor(
    readonly ctx: QuickJSContext,
    readonly deadline: number,
    readonly logs: LogBuffer,
    readonly redact: Redact,
    builtinConfig: BuiltinConfig,
    private readonly externallyCancelled: () => boolean = () => false,
  ) {
    this.builtins = {
      signal: this.signal,
      deadline,
      redact,
      config: builtinConfig,
      counters: { requests: 0 },
      log: (message) => logs.info(message),
    };
  }

  /** True once the call must stop running guest code (the QuickJS interrupt handler asks this). */
  shouldInterrupt(): boolean {
    if (!this.cancelled && this.externallyCancelled()) this.cancelled = true;
    return this.cancelled || performance.now() > this.deadline;
  }

  isCancelled(): boolean {
    if (!this.cancelled && this.externallyCancelled()) this.cancelled = true;
    return this.cancelled;
  }

  timedOut(): boolean {
    return performance.now() > this.deadline;
  }

  cancel(): void {
    this.cancelled = true;
    this.wake?.();
  }

  noteHostFault(err: unknown): void {
    this.hostFault ??= err;
  }

  /**
   * Resolves when host work completed, the deadline passed, the call was cancelled, or after at most
   * `CANCEL_POLL_MS`: the cancel flag is also polled, because the worker's wake-up from the main
   * thread (Atomics.waitAsync) was seen to lag by seconds on a loaded machine.
   */
  nextWake(): Promise<void> {
    return new Promise<void>((resolve) => {
      const ms = Math.min(CANCEL_POLL_MS, Math.max(0, this.deadline - performance.now()) + 1);
      const timer = setTimeout(() => done(), ms);
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
    });
  }

  /**
   * Starts host work for the guest and returns the guest promise for its result. `toGuest` turns the
   * value into a guest handle; `onError`, when given, turns a failure into a guest value the promise
   * resolves with (the prelude throws it as a real guest error); without it the promise rejects with a
   * plain error. Late completions after the call ended are dropped.
   */
  hostAsync<T>(
    work: (signal: AbortSignal) => Promise<T>,
    toGuest: (value: T) => QuickJSHandle = () => this.ctx.undefined,
    onError?: (err: unknown) => QuickJSHandle,
  ): QuickJSHandle {
    const ctx = this.ctx;
    const deferred = ctx.newPromise();
    this.deferreds.add(deferred);
    this.pendingHostWork++;
    const settle = (fn: () => void) => {
      this.pendingHostWork--;
      if (this.closed) return;
      try {
        fn();
      } finally {
        this.deferreds.delete(deferred);
        deferred.dispose();
        this.wake?.();
      }
    };
    let started: Promise<T>;
    try {
      started = work(this.signal);
    } catch (err) {
      started = Promise.reject(err);
    }
    started.then(
      (value) =>
        settle(() => {
          const h = toGuest(value);
          deferred.resolve(h);
          h.dispose();
        }),
      (err: unknown) =>
        settle(() => {
          if (onError) {
            const h = onError(err);
            deferred.resolve(h);
            h.dispose();
            return;
          }
          const facing = err instanceof GuestFacingError;
          if (!facing) this.noteHostFault(err);
          const h = ctx.newError({
            name: facing ? err.guestName : 'Error',
            message: facing ? this.redact(err.message) : 'internal error in a sandbox built-in',
          });
          deferred.reject(h);
          h.dispose();
        }),
    );
    return deferred.handle;
  }

  /** Ends the call: cancels host work and frees every deferred the guest still holds. */
  close(): void {
    this.closed = true;
    this.abort.abort(new Error('sandbox call ended'));
    for (const d of this.deferreds) d.dispose();
    this.deferreds.clear();
  }
}
