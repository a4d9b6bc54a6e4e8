/**
 * The Piscina worker: runs sandbox calls on this thread's WASM modules. One module per concurrent call
 * (the memory cap is per module), reused across calls until it grows or breaks.
 */
import { workerData } from 'piscina';
import { runSandbox, SandboxCancelledError, WasmModulePool } from '../sandbox/index.js';
import { startTask } from './cancel-flag.js';
import type { WorkerReply, WorkerSetup, WorkerTask } from './worker-task.js';

const setup = workerData as WorkerSetup;
const modules = new WasmModulePool(setup.modules);

export default async function runTask(task: WorkerTask): Promise<WorkerReply> {
  const queueTimeMs = Math.max(0, performance.timeOrigin + performance.now() - task.submittedAt);
  const started = startTask(task.cancelFlag);
  if (!started) return { status: 'cancelled' };
  const cm = await modules.acquire(task.request.memoryBytes);
  try {
    const outcome = await runSandbox(cm, task.request, setup.limits, started);
    return { status: 'done', outcome, queueTimeMs };
  } catch (err) {
    if (err instanceof SandboxCancelledError) return { status: 'cancelled' };
    cm.broken = true;
    // Only the message crosses back: it is logged by the pool, never shown to the caller.
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return { status: 'internal', message: `${err instanceof Error ? err.message : String(err)}${cause}` };
  } finally {
    started.finish();
    modules.release(cm);
  }
}
