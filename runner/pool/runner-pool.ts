import { Piscina } from 'piscina';
import type { PoolConfig } from '../config/index.js';
import type { SandboxOutcome, SandboxRequest } from '../sandbox/index.js';
import { encodeExecuteResponse, type WireEncoding } from '../wire/execute-response.js';
import { peekTenant } from '../../src/protobuf/execute-stream-wire.js';
import { penaltyKeysOf, startedHostWork, isStarted, isWaiting, requestCancel, requestIdOf, runningOn, startedAt, timeLimitOf } from './cancel-flag.js';
import { LatencyWindow } from './latency-window.js';
import { ActivityBoard, createActivityBoardMemory } from './worker-activity.js';
import type { CancelSignal } from './call-cancel.js';
import { CallDispatcher } from './call-dispatcher.js';
import { createFlagTableMemory, FlagTable } from './flag-table.js';
import { WorkerLostError } from './call-lane.js';
import { TenantShares } from './tenant-shares.js';
import { PoolCancelledError, PoolClosedError, PoolFullError, PoolInternalError, PoolUnavailableError } from './pool-errors.js';
import { createPenaltyTableMemory, PenaltyTable } from './hard-stop-penalty.js';
import { isLaneOffer, type WireReply, type WorkerReply, type WorkerSetup, type WorkerTask } from './worker-task.js';

export interface PoolStatus {
  workers: number;
  busy: number;
  queued: number;
  completed: number;
  failed: number;
  workersReplaced: number;
  maxQueue: number;
  concurrentPerWorker: number;
  latency: { p50: number; p90: number; p99: number; max: number; samples: number };
}

export interface ExecuteResult {
  outcome: SandboxOutcome;
  queueTimeMs: number;
}

/** One Execute call as it came off the wire (see {@link RunnerPool.executeWire}). */
export interface WireCall {
  /** The encoded ExecuteRequest, in an ArrayBuffer of its own: a large one is transferred to the worker. */
  body: Uint8Array;
  encoding: WireEncoding;
  /** Answer with the 5-byte gRPC message header in front of the response. */
  grpcFramed: boolean;
  /** The client's deadline (`performance.timeOrigin + performance.now()` clock), if any. */
  deadlineAt?: number | undefined;
}

export type { WireAnswer, WireInvalid, WireReply } from './worker-task.js';

export interface RunnerPool {
  /** Runs one call. Rejects with PoolFullError, PoolCancelledError, PoolInternalError or PoolClosedError. */
  execute(request: SandboxRequest, signal?: CancelSignal): Promise<ExecuteResult>;
  /**
   * Runs one call given as the bytes of an ExecuteRequest and answers with the bytes of its
   * ExecuteResponse: the worker decodes, validates (a refusal resolves as `status: 'invalid'`), runs and
   * encodes. A large `call.body`'s buffer is transferred (detached here). Rejects like {@link execute}.
   */
  executeWire(call: WireCall, signal?: CancelSignal): Promise<WireReply>;
  status(): PoolStatus;
  /** Waits for running calls (up to `timeoutMs`), then stops the workers. */
  close(timeoutMs?: number): Promise<void>;
}

/**
 * QuickJS's stack must stay well inside the worker's V8 stack: every WASM frame also uses V8's stack,
 * and recursion inside QuickJS's C code (JSON.parse of '[[[…', String() of nested arrays) overflowed a
 * 4 MB V8 stack before QuickJS's own 1 MB check fired. A V8 overflow inside the WASM corrupts the module.
 */
const WORKER_STACK_MB = 32;
/**
 * QuickJS checks its deadline between bytecode steps only; a single long built-in call
 * (`new Array(2e8).indexOf(1)`) can run far past it. A call still running this long after its
 * deadline gets its worker terminated (Piscina replaces it): the only way to stop a WASM loop. The
 * worker is found by the thread id the task recorded in its flag.
 */
const HARD_STOP_GRACE_MS = 1000;
/**
 * A worker's JavaScript garbage per call is small (the sandbox lives in WebAssembly memory), yet V8 lets
 * a busy thread's young generation grow to tens of MiB: under load each worker's RSS rose by ~30 MiB
 * over the first ~30k calls and then stayed. 8 MiB kept the runner's RSS within ~12 % from 1k to 60k
 * calls with no measurable cost in calls/s; 4 MiB cost CPU (more scavenges). bench/execute.ts (c).
 */
const WORKER_YOUNG_GENERATION_MB = 8;
const WATCHDOG_INTERVAL_MS = 250;

/** What a pool that serves wire calls needs beyond PoolConfig: the request size limits. */
export interface RunnerPoolOptions {
  /** Largest `code` of a wire call, in bytes of UTF-8 (RunnerConfig.maxCodeBytes). */
  maxCodeBytes: number;
  /** Largest `input` + `auth` of a wire call, as JSON bytes (RunnerConfig.maxInputBytes). */
  maxInputBytes: number;
  /**
   * Workers load the request built-ins' libraries at start (builtins/index.ts, preloadRequestLibraries):
   * set by a runner that warms up, whose first calls must all be fast. Default: on first use.
   */
  preloadLibraries?: boolean;
}

/** A pool made for sandbox requests only (`ldbox run`) refuses every wire call. */
const NO_WIRE_CALLS: RunnerPoolOptions = { maxCodeBytes: 0, maxInputBytes: 0 };

/** How a call ended, whatever its kind: the reply, or the call's worker was stopped past its deadline. */
type Settled = { reply: WorkerReply } | { hardStopped: true; timeoutMs: number; requestId: string };

/**
 * Calls placed on a worker beyond those it runs, so it never runs dry while this thread is busy (see
 * call-dispatcher.ts). 32: with 64 calls in flight on 2 workers (bench/execute.ts), none waits here.
 */
const CALLS_AHEAD_PER_WORKER = 32;

/** Calls a worker counts as computing side by side before the dispatcher looks elsewhere (call-dispatcher.ts). */
const COMPUTE_SLOTS_PER_WORKER = 4;

/** A request body this large is moved to the worker; a smaller one is copied (cheaper than a transfer). */
const TRANSFER_ABOVE_BYTES = 64 * 1024;

/**
 * The pool of sandbox workers. Piscina starts the workers (with their resource limits) and replaces one
 * that dies; calls reach them through each worker's call lane, in batches (call-lane.ts,
 * call-dispatcher.ts). Each call has a shared-memory cancel flag, so a caller's cancellation or deadline
 * stops its sandbox without terminating the worker. When a worker dies (a crash, its heap limit, a hard
 * stop), only its own calls are affected.
 */
export function createRunnerPool(config: PoolConfig, options: RunnerPoolOptions = NO_WIRE_CALLS): RunnerPool {
  const activity = createActivityBoardMemory();
  const board = new ActivityBoard(activity);
  const penaltyMemory = createPenaltyTableMemory();
  const penalties = new PenaltyTable(penaltyMemory);
  // Calls a worker runs at once: computing one at a time, the rest parked while they wait for host work.
  const perWorker = Math.max(1, Math.ceil(config.maxInflight / config.size));
  // Calls placed on a worker beyond those parked there: a few it computes and those waiting to start. Kept
  // short, so that calls that compute are not committed to one worker ahead of time: lanes as deep as
  // perWorker cost bench:execute ~20 % (1.01x against 1.27x of the bare reference).
  const laneDepth = Math.min(perWorker, COMPUTE_SLOTS_PER_WORKER) + CALLS_AHEAD_PER_WORKER;
  // Every call alive holds a flag: at most perWorker per worker started, laneDepth more placed, the queue.
  const flagSlots = config.maxQueue + config.size * (perWorker + laneDepth) * 2 + 64;
  // Every call alive holds a slot: those queued, those placed on a lane, and a margin for lanes of
  // workers being replaced.
  const flagMemory = createFlagTableMemory(flagSlots);
  const flagTable = new FlagTable(flagMemory);
  const setup: WorkerSetup = {
    activity,
    penalties: penaltyMemory,
    flags: flagMemory,
    nice: config.workerNice ?? 0,
    preloadLibraries: options.preloadLibraries ?? false,
    limits: {
      maxResultBytes: config.maxResultBytes,
      maxLogEntries: config.maxLogEntries,
      maxLogChars: config.maxLogChars,
      // At most 1 MiB (LDBOX_SANDBOX_STACK's maximum), well inside WORKER_STACK_MB.
      maxStackBytes: config.sandboxStackBytes,
      builtins: config.builtins,
    },
    modules: {
      recycleAboveBytes: config.recycleAboveBytes,
      // Every call starts from the module's snapshot, so a module does not age with use; replacing it
      // anyway (every 5000 calls before) cost a new instance and realm, and left the old memory for the
      // GC to find: the RSS saw-tooth of bench/execute.ts (c). A module whose memory grew is still replaced.
      maxCallsPerModule: Number.MAX_SAFE_INTEGER,
    },
    defaultMemoryBytes: config.defaultMemoryBytes,
    sandboxes: perWorker,
    requests: {
      maxCodeBytes: options.maxCodeBytes,
      maxInputBytes: options.maxInputBytes,
      pool: {
        defaultTimeoutMs: config.defaultTimeoutMs,
        maxTimeoutMs: config.maxTimeoutMs,
        defaultMemoryBytes: config.defaultMemoryBytes,
        maxMemoryBytes: config.maxMemoryBytes,
        minMemoryBytes: config.minMemoryBytes,
      },
    },
  };
  const dispatcher = new CallDispatcher(board, {
    sandboxes: Math.min(perWorker, COMPUTE_SLOTS_PER_WORKER),
    laneDepth,
  });
  const piscina = new Piscina<WorkerTask, WorkerReply>({
    filename: new URL('./worker.js', import.meta.url).href,
    minThreads: config.size,
    maxThreads: config.size,
    idleTimeout: config.idleTimeoutMs,
    // The default 'sync' mode parks an idle worker in Atomics.wait; 'disabled' keeps its event loop
    // running, which the call lane, the per-call cancel wait and timers rely on.
    atomics: 'disabled',
    // Piscina's run/wait histograms are not read (GetPoolStatus keeps its own window).
    recordTiming: false,
    workerData: setup,
    resourceLimits: {
      stackSizeMb: WORKER_STACK_MB,
      maxOldGenerationSizeMb: config.workerHeapMb,
      maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB,
    },
  });
  // A worker that dies (crash, heap limit, a hard stop) is destroyed and Piscina starts another.
  let workersReplaced = 0;
  piscina.on('workerDestroy', (worker: { id: number }) => {
    dispatcher.detach(worker.id);
    board.release(worker.id);
    if (!closing) workersReplaced++;
  });
  // Piscina re-emits worker failures as 'error' when no task owns them; they must not crash the process.
  piscina.on('error', () => {});
  // Each worker offers its call lane once it has loaded (worker-lane.ts).
  piscina.on('message', (message: unknown) => {
    if (isLaneOffer(message) && !closing) dispatcher.attach(message.threadId, message.ldboxCallLane);
  });
  // Every call not yet answered, by its cancel flag; a started flag is a call a worker runs, the others
  // wait (here or inside a worker), so "busy" and "queued" are read from the flags.
  // The time limit of a wire call is known once its worker decoded it (timeLimitOf, 0 before).
  const inFlight = new Map<Int32Array, { timeoutMs: number; hardStopped: boolean }>();
  const watchdog = setInterval(() => {
    const now = performance.timeOrigin + performance.now();
    for (const [flag, call] of inFlight) {
      const since = startedAt(flag);
      const timeoutMs = call.timeoutMs || timeLimitOf(flag);
      if (call.hardStopped || !isStarted(flag) || since === 0 || timeoutMs === 0 || now <= since + timeoutMs + HARD_STOP_GRACE_MS) continue;
      const worker = piscina.threads.find((w) => w.threadId === runningOn(flag));
      if (!worker) continue;
      call.hardStopped = true;
      penalties.recordCall(penaltyKeysOf(flag));
      void worker.terminate();
    }
  }, WATCHDOG_INTERVAL_MS);
  watchdog.unref();
  let completed = 0;
  let failed = 0;
  let closing = false;
  const shares = new TenantShares(config.maxQueue + config.size * perWorker);
  const latency = new LatencyWindow();

  /**
   * Runs one task to its end. Counts it as completed when it produced an answer for the caller (an
   * outcome, a refusal of the request, or a timeout after a hard stop), as failed otherwise.
   *
   * A call whose worker is lost under it (stopped because another call on it was stuck, or crashed) is
   * run again on another worker if it had not started host work: until then it had no effect outside
   * the sandbox, so the caller cannot tell. Otherwise, or when it loses a second worker, it fails with
   * UNAVAILABLE: the caller may retry if the call's effects allow.
   */
  async function runTask(
    build: (slot: number, cancelFlag: Int32Array, submittedAt: number) => WorkerTask,
    timeoutMs: number,
    signal: CancelSignal | undefined,
    tenant: string,
    transfer?: ArrayBuffer,
  ): Promise<Settled> {
    if (closing) throw new PoolClosedError('the runner is shutting down');
    if (signal?.aborted) throw new PoolCancelledError('the call was cancelled before it started');
    const started = performance.now();
    // As many calls as the workers run at once and maxQueue more waiting (here or inside a worker), shared
    // between the tenants (tenant-shares.ts).
    const refused = shares.refusal(tenant);
    if (refused) {
      failed++;
      throw new PoolFullError(`${refused.full ? `the runner's queue is full (${config.maxQueue} calls waiting)` : refused.message}: retry later`);
    }
    shares.add(tenant);
    try {
      return await runAdmitted(build, timeoutMs, signal, tenant, started, transfer);
    } finally {
      shares.remove(tenant);
    }
  }

  /** {@link runTask} once the call is admitted: takes a flag and runs it on a worker (again if it lost one). */
  async function runAdmitted(
    build: (slot: number, cancelFlag: Int32Array, submittedAt: number) => WorkerTask,
    timeoutMs: number,
    signal: CancelSignal | undefined,
    tenant: string,
    started: number,
    transfer: ArrayBuffer | undefined,
  ): Promise<Settled> {
    for (let attempt = 1; ; attempt++) {
      const taken = flagTable.take();
      if (!taken) {
        failed++;
        throw new PoolFullError(`the runner's queue is full (${config.maxQueue} calls waiting): retry later`);
      }
      const { slot, flag: cancelFlag } = taken;
      const onAbort = () => requestCancel(cancelFlag);
      signal?.addEventListener('abort', onAbort, { once: true });
      const entry = { timeoutMs, hardStopped: false };
      inFlight.set(cancelFlag, entry);
      let reply: WorkerReply;
      try {
        reply = await dispatcher.run(build(slot, cancelFlag, performance.timeOrigin + started), transfer, tenant);
      } catch (err) {
        if (signal?.aborted) {
          failed++;
          throw new PoolCancelledError('the call was cancelled');
        }
        if (entry.hardStopped) {
          completed++;
          latency.record(performance.now() - started);
          return { hardStopped: true, timeoutMs: entry.timeoutMs || timeLimitOf(cancelFlag), requestId: requestIdOf(cancelFlag) };
        }
        if (closing) {
          failed++;
          throw new PoolClosedError('the runner shut down during the call', { cause: err });
        }
        if (!(err instanceof WorkerLostError)) {
          failed++;
          throw new PoolInternalError(`the call failed in the pool: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        }
        if (attempt === 1 && !startedHostWork(cancelFlag)) continue;
        failed++;
        throw new PoolUnavailableError(
          startedHostWork(cancelFlag)
            ? 'the call lost its sandbox worker (stopped for another call or crashed) after it had started host work (ld.request, ld.wait, …), so it was not run again: retry if its effects allow'
            : 'the call lost its sandbox worker twice: retry later',
          { cause: err },
        );
      } finally {
        inFlight.delete(cancelFlag);
        signal?.removeEventListener('abort', onAbort);
        flagTable.give(slot);
      }
      if (reply.status === 'cancelled') {
        failed++;
        throw new PoolCancelledError('the call was cancelled');
      }
      if (reply.status === 'throttled') {
        failed++;
        throw new PoolFullError(reply.message);
      }
      if (reply.status === 'internal') {
        failed++;
        throw new PoolInternalError(reply.message);
      }
      completed++;
      latency.record(performance.now() - started);
      return { reply };
    }
  }

  async function execute(request: SandboxRequest, signal?: CancelSignal): Promise<ExecuteResult> {
    const settled = await runTask(
      (slot, cancelFlag, submittedAt) => ({ kind: 'sandbox', request, slot, cancelFlag, submittedAt }),
      request.timeoutMs,
      signal,
      request.tenant ?? '',
    );
    if ('hardStopped' in settled) {
      return { outcome: stuckPastDeadline(request.requestId, request.timeoutMs, performance.now()), queueTimeMs: 0 };
    }
    if (settled.reply.status !== 'done') throw new PoolInternalError(`unexpected reply ${settled.reply.status}`);
    return { outcome: settled.reply.outcome, queueTimeMs: settled.reply.queueTimeMs };
  }

  async function executeWire(call: WireCall, signal?: CancelSignal): Promise<WireReply> {
    const started = performance.now();
    const transfer = call.body.byteLength > TRANSFER_ABOVE_BYTES ? (call.body.buffer as ArrayBuffer) : undefined;
    // The request is decoded in the worker; its tenant is read here (a few fields skipped) for the fair queue.
    const tenant = call.encoding === 'proto' ? peekTenant(call.body) : '';
    const settled = await runTask(
      (slot, cancelFlag, submittedAt) => ({
        kind: 'wire',
        slot,
        body: call.body,
        encoding: call.encoding,
        grpcFramed: call.grpcFramed,
        deadlineAt: call.deadlineAt,
        cancelFlag,
        submittedAt,
      }),
      0,
      signal,
      tenant,
      transfer,
    );
    if ('hardStopped' in settled) {
      // The worker and the call's logs are gone; the answer is a timeout, encoded here (it is small).
      const outcome = stuckPastDeadline(settled.requestId, settled.timeoutMs, performance.now() - started);
      return {
        status: 'answered',
        body: encodeExecuteResponse(outcome, 0, call.encoding, call.grpcFramed),
        requestId: settled.requestId,
        outcome: 'error',
        deadlineExceeded: false,
        queueTimeMs: 0,
      };
    }
    const reply = settled.reply;
    if (reply.status !== 'answered' && reply.status !== 'invalid') throw new PoolInternalError(`unexpected reply ${reply.status}`);
    return reply;
  }

  return {
    execute,
    executeWire,
    status: () => {
      // A call that ended but whose reply is still on its way counts as neither.
      let busy = 0;
      let queued = 0;
      for (const flag of inFlight.keys()) {
        if (isStarted(flag)) busy++;
        else if (isWaiting(flag)) queued++;
      }
      return {
        workers: piscina.threads.length,
        busy,
        queued,
        completed,
        failed,
        workersReplaced,
        maxQueue: config.maxQueue,
        concurrentPerWorker: perWorker,
        latency: latency.percentiles(),
      };
    },
    close: async (timeoutMs = 10_000) => {
      closing = true;
      clearInterval(watchdog);
      const drained = new Promise<void>((resolve) => {
        const poll = () => (inFlight.size === 0 ? resolve() : setTimeout(poll, 20).unref());
        poll();
      });
      await Promise.race([drained, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
      dispatcher.close();
      await piscina.destroy();
    },
  };
}

/** The outcome of a call whose worker had to be terminated: its logs went with the worker. */
function stuckPastDeadline(requestId: string, timeoutMs: number, wallTimeMs: number): SandboxOutcome {
  return {
    requestId,
    error: {
      kind: 'timeout',
      name: 'TimeoutError',
      message: `the code ran longer than its ${timeoutMs} ms limit (it was stuck in a built-in and its worker was stopped)`,
      stack: '',
    },
    logs: [],
    wallTimeMs,
    memoryUsedBytes: 0,
  };
}
