/**
 * The Piscina worker: runs sandbox calls on this thread's WASM modules. One module per memory cap (the
 * cap is per module), shared by the calls of that cap — one computes at a time, the others are parked
 * waiting for host work (snapshot-realm.ts) — and reused until it grows or breaks. While the worker is
 * idle, each kept module prepares the fresh sandbox of its next call (see prepareAhead).
 *
 * A wire task arrives as the request's bytes: decoding, validation and encoding the response happen
 * here, so the main thread only moves bytes (a large request or result never blocks it) and nothing is
 * structured-cloned but a few numbers and strings; the response's bytes are transferred back.
 */
import { threadId } from 'node:worker_threads';
import { workerData } from 'piscina';
import { BUILTINS, GUEST_BINDINGS, preloadRequestLibraries } from '../builtins/index.js';
import {
  type CancelSource,
  type CappedModule,
  prepareAhead,
  registerBuiltins,
  runSandbox,
  SandboxCancelledError,
  type SandboxOutcome,
  type SandboxRequest,
  WasmModulePool,
} from '../sandbox/index.js';
import { decodeBinaryRequest, decodeJsonRequest, isInvalidRequest, toSandboxRequest } from '../wire/execute-request.js';
import { encodeExecuteResponse } from '../wire/execute-response.js';
import { describeTask, type StartedTask, startTask } from './cancel-flag.js';
import { lowerThreadPriority } from './thread-priority.js';
import { WorkerActivity } from './worker-activity.js';
import { PenaltyTable, penaltyKeys } from './hard-stop-penalty.js';
import { FlagViews } from './flag-table.js';
import { type LaneAnswer, openWorkerLane } from './worker-lane.js';
import type { WireAnswer, WireTask, WorkerReply, WorkerSetup, WorkerTask } from './worker-task.js';

const setup = workerData as WorkerSetup;
lowerThreadPriority(setup.nice);
// The worker composes the runner's sandbox: it hands the sandboxes of this thread their ld.* built-ins
// (the sandbox names no concrete built-in; runner/builtins/guest-boundary.ts is the contract).
registerBuiltins({ table: BUILTINS, bindings: GUEST_BINDINGS });
const modules = new WasmModulePool(setup.modules);
const activity = new WorkerActivity(setup.activity, threadId);
const penalties = new PenaltyTable(setup.penalties);

/** Runs after pending I/O, so a call that is already waiting goes first. */
function prepareWhenIdle(cm: CappedModule): void {
  setImmediate(() => {
    if (cm.holders === 0) prepareAhead(cm, setup.limits);
  });
}

// Warm start: the first call finds a module with its sandbox ready.
void modules.acquire(setup.defaultMemoryBytes).then((cm) => {
  if (modules.release(cm)) prepareWhenIdle(cm);
});
if (setup.preloadLibraries) setImmediate(preloadRequestLibraries);

const MOVE_ABOVE_BYTES = 64 * 1024;

type Started = StartedTask;

const flags = new FlagViews(setup.flags);
openWorkerLane(runTask, setup.sandboxes, (slot) => flags.of(slot));

/** One call; `undefined` when the pool placed it on another worker meanwhile (nobody waits for it here). */
async function runTask(task: WorkerTask, placement: number, yielded: () => void): Promise<LaneAnswer | undefined> {
  const started = startTask(task.cancelFlag, placement, threadId);
  if (started === 'elsewhere') return undefined;
  if (started === 'cancelled') return { reply: CANCELLED };
  activity.computing();
  const now = performance.timeOrigin + performance.now();
  const queueTimeMs = Math.max(0, now - task.submittedAt);
  try {
    if (task.kind === 'sandbox') {
      const refused = admit(task.cancelFlag, task.request);
      if (refused) return { reply: refused };
      const outcome = await run(task.request, started, yielded);
      return { reply: outcome ? { status: 'done', outcome, queueTimeMs } : CANCELLED };
    }
    return await runWire(task, started, now, queueTimeMs, yielded);
  } catch (err) {
    // Only the message crosses back: it is logged by the pool, never shown to the caller.
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return { reply: { status: 'internal', message: `${err instanceof Error ? err.message : String(err)}${cause}` } };
  } finally {
    started.finish();
  }
}

const CANCELLED: WorkerReply = { status: 'cancelled' };

/** Decode, validate, run, encode; a large reply's bytes are moved (transferred), not copied. */
async function runWire(task: WireTask, started: Started, now: number, queueTimeMs: number, yielded: () => void): Promise<LaneAnswer> {
  let checked;
  try {
    const message = task.encoding === 'json' ? decodeJsonRequest(task.body) : decodeBinaryRequest(task.body);
    checked = toSandboxRequest(message, setup.requests, task.deadlineAt === undefined ? undefined : task.deadlineAt - now);
  } catch (err) {
    if (isInvalidRequest(err)) return { reply: { status: 'invalid', message: err.message } };
    throw err;
  }
  const { request, deadlineLimited } = checked;
  const refused = admit(task.cancelFlag, request);
  if (refused) return { reply: refused };
  const outcome = await run(request, started, yielded);
  if (!outcome) return { reply: CANCELLED };
  const body = encodeExecuteResponse(outcome, queueTimeMs, task.encoding, task.grpcFramed);
  const answer: WireAnswer = {
    status: 'answered',
    body,
    requestId: outcome.requestId,
    outcome: outcome.error ? 'error' : 'ok',
    deadlineExceeded: deadlineLimited && outcome.error?.kind === 'timeout',
    queueTimeMs,
    memoryUsedBytes: outcome.memoryUsedBytes,
  };
  if (outcome.error) answer.errorKind = outcome.error.kind;
  if (outcome.internalFault !== undefined) answer.internalFault = outcome.internalFault;
  // Moving a buffer costs more than copying a small one (a transfer detaches and re-creates it): only
  // large responses are moved.
  return { reply: answer, transfer: body.byteLength < MOVE_ABOVE_BYTES ? undefined : (body.buffer as ArrayBuffer) };
}

/**
 * Notes the call's limit, id and penalty keys in its flag (the pool needs them if it must stop this
 * worker), and refuses the call while its code, or its tenant, cools down after forcing hard stops.
 */
function admit(flag: Int32Array, request: SandboxRequest): WorkerReply | undefined {
  const keys = penaltyKeys(request.tenant ?? '', request.code);
  describeTask(flag, request.timeoutMs, request.requestId, keys);
  const codeUntil = penalties.refusedUntil(keys.code);
  const tenantUntil = penalties.refusedUntil(keys.tenant);
  if (codeUntil === 0 && tenantUntil === 0) return undefined;
  const seconds = Math.ceil((Math.max(codeUntil, tenantUntil) - (performance.timeOrigin + performance.now())) / 1000);
  return {
    status: 'throttled',
    message:
      tenantUntil >= codeUntil
        ? `calls of this tenant recently got stuck past their deadline so that their worker had to be stopped, more than once; its calls are refused for another ${seconds} s (the pause doubles with each such stop)`
        : `this code recently got stuck past its deadline so that its worker had to be stopped; it is refused for another ${seconds} s (the pause doubles with each such stop)`,
  };
}

/** One sandbox call on a module of this thread; `undefined` when the caller cancelled it. */
async function run(request: SandboxRequest, started: Started, yielded: () => void): Promise<SandboxOutcome | undefined> {
  const cm = await modules.acquire(request.memoryBytes);
  started.guestStarting();
  try {
    return await runSandbox(cm, request, setup.limits, new TaskCancelSource(started, yielded));
  } catch (err) {
    if (err instanceof SandboxCancelledError) return undefined;
    cm.broken = true;
    throw err;
  } finally {
    if (modules.release(cm)) prepareWhenIdle(cm);
  }
}

/**
 * How runSandbox cancels a call of this worker. A class, not an object literal with a getter: V8 puts
 * a literal's getter pair in the old generation, where it keeps the call's objects alive past every
 * scavenge (promoted garbage that only a full GC frees).
 */
class TaskCancelSource implements CancelSource {
  constructor(
    private readonly task: Started,
    private readonly yielded: () => void,
  ) {}

  parked(): void {
    activity.parked(1);
    this.yielded();
  }

  resumed(): void {
    activity.parked(-1);
  }

  get signal(): AbortSignal {
    return this.task.signal;
  }

  /** QuickJS's interrupt handler asks this while guest code runs: the moment to tell the pool that this thread is taken. */
  isCancelled(): boolean {
    activity.computing();
    return this.task.isCancelled();
  }

  hostWorkStarted(): void {
    this.task.hostWorkStarted();
  }

  isCancelledQuietly(): boolean {
    return this.task.isCancelled();
  }
}
