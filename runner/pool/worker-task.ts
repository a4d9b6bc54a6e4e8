import type { MessagePort } from 'node:worker_threads';
import type { PenaltyTableMemory } from './hard-stop-penalty.js';
import type { ActivityBoardMemory } from './worker-activity.js';
import type { SandboxLimits, SandboxOutcome, SandboxRequest, UserErrorKind, WasmModulePoolOptions } from '../sandbox/index.js';
import type { RequestLimits } from '../wire/execute-request.js';
import type { WireEncoding } from '../wire/execute-response.js';

/** What the pool hands a worker at start (Piscina `workerData`). */
export interface WorkerSetup {
  limits: SandboxLimits;
  modules: WasmModulePoolOptions;
  /** The memory limit most calls use: the worker warms a module of that size at start. */
  defaultMemoryBytes: number;
  /**
   * Calls the worker has started at once, computing (one at a time) or parked waiting for host work (its
   * share of LDBOX_RUNNER_MAX_INFLIGHT); more placed on it wait to start.
   */
  sandboxes: number;
  /** What an ExecuteRequest may ask for: the worker validates wire requests itself. */
  requests: RequestLimits;
  /** Where the worker says when its thread is blocked (see worker-activity.ts). */
  activity: ActivityBoardMemory;
  /** Code refused for a while after forcing hard stops (see hard-stop-penalty.ts). */
  penalties: PenaltyTableMemory;
  /** The calls' cancel flags (flag-table.ts). */
  flags: SharedArrayBuffer;
  /** Nice steps the worker lowers its own thread's priority by at start (thread-priority.ts). */
  nice: number;
  /** Load the request built-ins' libraries at start rather than on first use (RunnerPoolOptions.preloadLibraries). */
  preloadLibraries: boolean;
}

/** Fields every task carries. */
interface TaskBase {
  /** The call's slot in the flag table (flag-table.ts); its flag does not travel, the slot names it. */
  slot: number;
  /** The call's cancellation flag (shared memory, see cancel-flag.ts): this thread's view of the slot. */
  cancelFlag: Int32Array;
  /** `performance.timeOrigin + performance.now()` when the pool accepted the call, for queue time. */
  submittedAt: number;
}

/** A call already turned into a sandbox request by the caller (the CLI's `ldbox run`). */
export interface SandboxTask extends TaskBase {
  kind: 'sandbox';
  request: SandboxRequest;
}

/**
 * A call as it came off the wire: the encoded ExecuteRequest, transferred to the worker, which decodes,
 * validates, runs and encodes the ExecuteResponse; the main thread only moves bytes.
 */
export interface WireTask extends TaskBase {
  kind: 'wire';
  body: Uint8Array;
  encoding: WireEncoding;
  /** Prefix the response with the 5-byte gRPC message header. */
  grpcFramed: boolean;
  /** The client's deadline, epoch ms (`performance.timeOrigin + performance.now()` clock). */
  deadlineAt: number | undefined;
}

export type WorkerTask = SandboxTask | WireTask;

export type SandboxReply = { status: 'done'; outcome: SandboxOutcome; queueTimeMs: number };

/** The answer to a wire task, beside the bytes: what the main thread needs for status, logs and metrics. */
export interface WireAnswer {
  status: 'answered';
  /** The encoded ExecuteResponse (gRPC-framed if asked), transferred back. */
  body: Uint8Array;
  requestId: string;
  /** `error` when the user code failed (the response carries `error`), for metrics. */
  outcome: 'ok' | 'error';
  /**
   * Why the user code failed, when `outcome` is `error`, for metrics. Absent on the pool's own answer
   * for a call whose worker had to be stopped (runner-pool.ts), which is a timeout.
   */
  errorKind?: UserErrorKind;
  /** The sandbox's memory high-water mark (the response's `stats.memoryUsedBytes`), for metrics. */
  memoryUsedBytes?: number;
  /** The call hit its time limit and the limit was the client's deadline: answer DEADLINE_EXCEEDED. */
  deadlineExceeded: boolean;
  queueTimeMs: number;
  /** A host-side failure of a built-in, for the operator's log; never sent to the caller. */
  internalFault?: string;
}

/** The request itself was refused (undecodable or against the limits): INVALID_ARGUMENT with `message`. */
export interface WireInvalid {
  status: 'invalid';
  message: string;
}

export type WireReply = WireAnswer | WireInvalid;

export type WorkerReply =
  | SandboxReply
  | WireReply
  | { status: 'cancelled' }
  | { status: 'throttled'; message: string }
  | { status: 'internal'; message: string; requestId?: string };

/** The message a worker posts to its parent at start: the pool's end of the worker's call lane. */
export interface LaneOffer {
  ldboxCallLane: MessagePort;
  threadId: number;
}

export function isLaneOffer(message: unknown): message is LaneOffer {
  return typeof message === 'object' && message !== null && 'ldboxCallLane' in message;
}
