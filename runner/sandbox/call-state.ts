import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten';
import type { BuiltinConfig, BuiltinContext } from '../builtins/guest-boundary.js';
import { GuestAllocationError } from './guest-allocation-error.js';
import type { LogBuffer } from './log-buffer.js';
import { type CallImage, releaseCallImage } from './memory-snapshot.js';
import type { Redact } from './redactor.js';

const CANCEL_POLL_MS = 50;

/** Which call a realm serves right now; host functions and the interrupt handler read it. */
export interface CallSlot {
  call: CallState | undefined;
  /**
   * Marks binary values in data crossing the boundary (see data-crossing.ts). Random per realm and
   * never visible to user code, so user data cannot forge a marker; free of NUL, since strings cross
   * into QuickJS as C strings.
   */
  readonly token: string;
}
/** Host operations one call may have pending at once (a flood of ld.wait/ld.request promises). */
export const MAX_PENDING_HOST_WORK = 10_000;

/**
 * The host-side state of one sandbox call: its deadline, cancellation, the host work the guest is
 * awaiting, and its logs. The run loop sleeps on `nextWake()` and is woken when host work lands, the
 * deadline passes, or the call is cancelled.
 *
 * Host work is cancelled through `signal` when the call ends for any reason, and a late completion is
 * dropped (`closed`): nothing calls into a context after its teardown began.
 */
export class CallState {
  /** The guest `resolve` functions of pending host work (dup'd handles we own). */
  private readonly pending = new Set<QuickJSHandle>();
  /**
   * Host work that finished and whose value has not been handed to the guest yet: that needs the call's
   * memory in its module, so the run loop does it ({@link deliverLanded}) once the call is resumed.
   */
  private landed: (() => void)[] = [];
  /** The call's pages while it is parked and another call had the module (snapshot-realm.ts). */
  parkedImage: CallImage | undefined;
  /** Its memory could not be saved when another call needed the module: it cannot go on. */
  unresumable = false;
  /** Cleanups registered by built-ins (timers), run once when the call ends. */
  readonly endListeners = new Set<() => void>();
  /** Made when a built-in first asks for the signal: most calls never do, and one costs ~5 µs. */
  private abort: AbortController | undefined;

  get signal(): AbortSignal {
    if (!this.abort) {
      this.abort = new AbortController();
      if (this.closed) this.abort.abort(new Error('sandbox call ended'));
    }
    return this.abort.signal;
  }
  pendingHostWork = 0;
  cancelled = false;
  closed = false;
  /** A copy into the module failed (its memory is full): the guest is stopped and the call fails. */
  allocationFailed = false;
  /** The first host-side failure of a built-in, reported to the operator (see SandboxOutcome.internalFault). */
  hostFault: unknown;
  /** Whether the module asked for memory past its cap (set by the runner): the guest is stopped. */
  memoryExhausted: () => boolean = () => false;
  /** Whether the sandbox's memory is at its cap (set by the runner; QuickJS then throws null). */
  nearMemoryCap: () => boolean = () => false;
  /** Told once, when the call first starts host work that may reach outside (see CancelSource). */
  onHostWork: (() => void) | undefined;
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
    /** As externallyCancelled, without telling anyone the thread computes (polled for parked calls). */
    private readonly cancelledQuietly: () => boolean = externallyCancelled,
  ) {
    this.builtins = new CallBuiltins(this, deadline, redact, builtinConfig, logs);
  }

  /** True once the call must stop running guest code (the QuickJS interrupt handler asks this). */
  shouldInterrupt(): boolean {
    if (!this.cancelled && this.externallyCancelled()) this.cancelled = true;
    return this.cancelled || this.allocationFailed || this.memoryExhausted() || performance.now() > this.deadline;
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

  /** Host work has landed and waits to be handed to the guest. */
  get hasLanded(): boolean {
    return this.landed.length > 0;
  }

  /**
   * Resolves when host work landed, the deadline passed or the call was cancelled. Cancellation reaches a
   * waiting call through its signal; as a fallback (the worker's wake-up from the main thread through
   * Atomics.waitAsync was seen to lag by seconds on a loaded machine) one timer per thread polls every
   * waiting call's flag each `CANCEL_POLL_MS`, rather than a timer per call: a runner holds thousands of
   * waiting calls.
   */
  nextWake(): Promise<void> {
    return new Promise<void>((resolve) => {
      const ms = Math.max(0, this.deadline - performance.now()) + 1;
      const timer = setTimeout(() => done(), ms);
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        sleepers.delete(this);
        resolve();
      };
      this.wake = done;
      sleepers.add(this);
      sweepWhileSleeping();
    });
  }

  /** For the poll of waiting calls: wakes this call if its caller cancelled it. */
  wakeIfCancelled(): void {
    if (!this.cancelled && this.cancelledQuietly()) this.cancelled = true;
    if (this.cancelled) this.wake?.();
  }

  /**
   * Hands the values of landed host work to the guest (each resolves its guest promise). Only while the
   * call's memory is in its module and it holds the realm.
   */
  deliverLanded(): void {
    const landed = this.landed;
    if (landed.length === 0) return;
    this.landed = [];
    for (const deliver of landed) deliver();
  }

  /**
   * Runs host work for the guest. The guest made the promise itself and handed over its `resolve`
   * (a handle we now own): quickjs-emscripten's own newPromise reads a view of WASM memory that the
   * call itself may detach by growing the memory, which failed under a flood of pending calls.
   * `resolve` is called with `toGuest(value)` or `onError(err)`; the prelude turns a failure tuple into
   * a thrown guest error. Late completions after the call ended are dropped.
   */
  hostAsync<T>(resolve: QuickJSHandle, work: Promise<T>, toGuest: (value: T) => QuickJSHandle, onError: (err: unknown) => QuickJSHandle): void {
    this.pending.add(resolve);
    this.pendingHostWork++;
    if (this.onHostWork) {
      this.onHostWork();
      this.onHostWork = undefined;
    }
    const settle = (make: () => QuickJSHandle) => {
      this.pendingHostWork--;
      if (this.closed) return;
      this.landed.push(() => {
        this.pending.delete(resolve);
        try {
          const value = make();
          const r = this.ctx.callFunction(resolve, this.ctx.undefined, value);
          value.dispose();
          if (r.error) r.error.dispose();
          else r.value.dispose();
        } catch (err) {
          // The module's memory is full (or broken): the run loop ends the call.
          if (!(err instanceof GuestAllocationError)) this.noteHostFault(err);
          this.allocationFailed = true;
        } finally {
          resolve.dispose();
        }
      });
      this.wake?.();
    };
    work.then(
      (value) => settle(() => toGuest(value)),
      (err: unknown) => settle(() => onError(err)),
    );
  }

  /**
   * Ends the call: cancels host work, and drops (never disposes) the handles pending work held: the
   * realm's memory is restored before the next call, and disposing then would free that call's memory.
   */
  close(): void {
    this.closed = true;
    this.abort?.abort(new Error('sandbox call ended'));
    for (const listener of this.endListeners) listener();
    this.endListeners.clear();
    this.pending.clear();
    this.landed = [];
    if (this.parkedImage) releaseCallImage(this.parkedImage);
    this.parkedImage = undefined;
    this.wake?.();
  }
}

/** The calls of this thread waiting in nextWake: polled for cancellation (see {@link CallState.nextWake}). */
const sleepers = new Set<CallState>();
let sweeper: NodeJS.Timeout | undefined;

function sweepWhileSleeping(): void {
  if (sweeper !== undefined) return;
  sweeper = setInterval(() => {
    if (sleepers.size === 0) {
      clearInterval(sweeper);
      sweeper = undefined;
      return;
    }
    for (const call of sleepers) call.wakeIfCancelled();
  }, CANCEL_POLL_MS);
  sweeper.unref();
}

/**
 * What the ld.* built-ins see of one call. A class, not an object literal: V8 allocates a literal's
 * getter pair in the old generation, and that pair then keeps the call's whole object graph (this
 * CallState, its logs, its closures) alive through every scavenge until the next full GC: ~1.2 KB
 * promoted per call, measured with --trace-gc-nvp. A getter on a prototype costs nothing per call.
 */
class CallBuiltins implements BuiltinContext {
  readonly counters = { requests: 0 };

  constructor(
    private readonly call: CallState,
    readonly deadline: number,
    readonly redact: Redact,
    readonly config: BuiltinConfig,
    private readonly logs: LogBuffer,
  ) {}

  get signal(): AbortSignal {
    return this.call.signal;
  }

  log(message: string): void {
    this.logs.info(message);
  }

  onEnd(listener: () => void): () => void {
    const listeners = this.call.endListeners;
    listeners.add(listener);
    return () => listeners.delete(listener);
  }
}
