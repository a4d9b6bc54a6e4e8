import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle } from 'quickjs-emscripten';
import { GuestFacingError } from './host-functions.js';
import type { LogBuffer } from './log-buffer.js';
import type { Redact } from './redactor.js';

/** Turns a host value into a fresh guest handle (owned by the caller). */
export type ToGuest<T> = (ctx: QuickJSContext, value: T) => QuickJSHandle;

const toUndefined: ToGuest<unknown> = (ctx) => ctx.undefined;

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
  private wake: (() => void) | undefined;

  constructor(
    readonly ctx: QuickJSContext,
    readonly deadline: number,
    readonly logs: LogBuffer,
    readonly redact: Redact,
    private readonly externallyCancelled: () => boolean = () => false,
  ) {}

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

  /** Resolves when host work completed, the deadline passed or the call was cancelled. */
  nextWake(): Promise<void> {
    return new Promise<void>((resolve) => {
      const ms = Math.max(0, this.deadline - performance.now()) + 1;
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
   * Starts host work for the guest and returns the guest promise for its result. A rejection with a
   * GuestFacingError shows its (redacted) message to the guest; any other rejection a generic one.
   */
  hostAsync<T>(work: (signal: AbortSignal) => Promise<T>, toGuest: ToGuest<T> = toUndefined): QuickJSHandle {
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
    work(this.signal).then(
      (value) =>
        settle(() => {
          const h = toGuest(ctx, value);
          deferred.resolve(h);
          h.dispose();
        }),
      (err: unknown) =>
        settle(() => {
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
