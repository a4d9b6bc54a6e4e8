/**
 * The lifecycle every ldbox role (gateway, executor, runner) goes through, with named states in the manner
 * of Temporal's `Worker` and piscina's `ThreadPool`:
 *
 *   starting ──listening──▶ ready ──close()/destroy()──▶ draining ──▶ closed
 *
 * - `starting`: the role is being built and its port is not listening yet;
 * - `ready`: it listens and takes work (its `/readyz` may still say 503 while a dependency such as NATS
 *   is away: readiness is this state *and* the role's dependencies);
 * - `draining`: {@link RoleLifecycle.close} was called: no new work, work in flight may finish;
 * - `closed`: everything it started is stopped.
 *
 * `close(timeoutMs)` drains for at most `timeoutMs`, then stops what is left; `destroy()` stops at once
 * without waiting for work in flight (and cuts a running `close()` short). Both are idempotent and return
 * the same promise, so every caller can await the end. `close` is the one verb for stopping a role.
 *
 * Tests: test/lifecycle/role-lifecycle.test.ts; per role, test/gateway/role-lifecycle.test.ts,
 * test/executor/executor.test.ts, test/runner/http1-port.test.ts.
 */

export type RoleState = 'starting' | 'ready' | 'draining' | 'closed';

/** The default grace of `close()`: running work gets this long to finish. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/**
 * The time a drain has: until `close()`'s timeout passes or `destroy()` is called, whichever comes first.
 * Roles race their in-flight work against it.
 */
export interface Grace {
  /** The whole grace `close()` was given (0 for `destroy()`), for parts that keep their own timer (the runner's pool). */
  readonly timeoutMs: number;
  /** Aborted by `destroy()`, also during a `close()`. */
  readonly signal: AbortSignal;
  /** Resolves true when `work` settled within the grace, false when the grace ended first. */
  within(work: Promise<unknown>): Promise<boolean>;
}

/** The steps one role fills in; {@link RoleLifecycle} calls them once, in order. */
export abstract class RoleLifecycle {
  #state: RoleState = 'starting';
  #stopping: Promise<void> | undefined;
  readonly #hardStop = new AbortController();

  get state(): RoleState {
    return this.#state;
  }

  /** True once the role was told to stop (`draining` or `closed`): it must take no new work. */
  get stopping(): boolean {
    return this.#state === 'draining' || this.#state === 'closed';
  }

  /** Drains for up to `timeoutMs`, then stops everything the role started. */
  close(timeoutMs = DEFAULT_CLOSE_TIMEOUT_MS): Promise<void> {
    return (this.#stopping ??= this.#stop(timeoutMs));
  }

  /** Stops at once: work in flight is cut off (the executor gives its jobs back), connections are dropped. */
  destroy(): Promise<void> {
    this.#hardStop.abort();
    return (this.#stopping ??= this.#stop(0));
  }

  /** Marks the role `ready` (called by the role once it listens). */
  protected started(): void {
    if (this.#state === 'starting') this.#state = 'ready';
  }

  /** True when `destroy()` was called: release without waiting (e.g. close NATS without draining it). */
  protected get destroyed(): boolean {
    return this.#hardStop.signal.aborted;
  }

  /** Stop taking new work and wait for work in flight, racing it against `grace`. */
  protected abstract drain(grace: Grace): Promise<void>;

  /** Stop everything that is left (connections, servers, NATS). Runs after `drain`, even if it threw. */
  protected abstract release(): Promise<void>;

  async #stop(timeoutMs: number): Promise<void> {
    this.#state = 'draining';
    const grace = new TimedGrace(timeoutMs, this.#hardStop.signal);
    try {
      await this.drain(grace);
    } finally {
      grace.end();
      try {
        await this.release();
      } finally {
        this.#state = 'closed';
      }
    }
  }
}

class TimedGrace implements Grace {
  readonly #over: Promise<false>;
  #timer: NodeJS.Timeout | undefined;
  #onAbort: (() => void) | undefined;

  constructor(
    readonly timeoutMs: number,
    readonly signal: AbortSignal,
  ) {
    const hardStop = signal;
    this.#over = new Promise<false>((resolve) => {
      if (hardStop.aborted || timeoutMs <= 0) return resolve(false);
      // A ref'd timer, as the roles' own timers were: the process waits out the grace it was given.
      this.#timer = setTimeout(() => resolve(false), timeoutMs);
      this.#onAbort = () => resolve(false);
      hardStop.addEventListener('abort', this.#onAbort, { once: true });
    });
  }

  within(work: Promise<unknown>): Promise<boolean> {
    return Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      this.#over,
    ]);
  }

  end(): void {
    clearTimeout(this.#timer);
    if (this.#onAbort) this.signal.removeEventListener('abort', this.#onAbort);
  }
}
