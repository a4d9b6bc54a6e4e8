import type { ActivityBoardMemory } from './worker-activity.js';
import type { SandboxLimits, SandboxOutcome, SandboxRequest, WasmModulePoolOptions } from '../sandbox/index.js';

/** What the pool hands a worker at start (Piscina `workerData`). */
export interface WorkerSetup {
  limits: SandboxLimits;
  modules: WasmModulePoolOptions;
  /** The memory limit most calls use: the worker warms a module of that size at start. */
  defaultMemoryBytes: number;
  /** Where the worker says when its thread is blocked (see worker-activity.ts). */
  activity: ActivityBoardMemory;
}

/** One task: the call and its cancellation flag (shared memory). */
export interface WorkerTask {
  request: SandboxRequest;
  cancelFlag: Int32Array;
  /** `performance.timeOrigin + performance.now()` when the pool accepted the call, for queue time. */
  submittedAt: number;
}

export type WorkerReply =
  | { status: 'done'; outcome: SandboxOutcome; queueTimeMs: number }
  | { status: 'cancelled' }
  | { status: 'internal'; message: string };
