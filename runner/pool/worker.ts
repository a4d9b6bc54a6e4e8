/**
 * The Piscina worker: runs sandbox calls on this thread's WASM modules. One module per concurrent call
 * (the memory cap is per module), reused across calls until it grows or breaks. While the worker is
 * idle, each kept module prepares the fresh sandbox of its next call (see prepareAhead).
 */
import { threadId } from 'node:worker_threads';
import { workerData } from 'piscina';
import { type CappedModule, prepareAhead, runSandbox, SandboxCancelledError, WasmModulePool } from '../sandbox/index.js';
import { startTask } from './cancel-flag.js';
import { WorkerActivity } from './worker-activity.js';
import type { WorkerReply, WorkerSetup, WorkerTask } from './worker-task.js';

const setup = workerData as WorkerSetup;
const modules = new WasmModulePool(setup.modules);
const activity = new WorkerActivity(setup.activity, threadId);

/** Runs after pending I/O, so a call that is already waiting goes first. */
function prepareWhenIdle(cm: CappedModule): void {
  setImmediate(() => {
    if (!cm.inUse) prepareAhead(cm, setup.limits);
  });
}

// Warm start: the first call finds a module with its sandbox ready.
void modules.acquire(setup.defaultMemoryBytes).then((cm) => {
  if (modules.release(cm)) prepareWhenIdle(cm);
});

export default async function runTask(task: WorkerTask): Promise<WorkerReply> {
  activity.computing();
  const queueTimeMs = Math.max(0, performance.timeOrigin + performance.now() - task.submittedAt);
  const started = startTask(task.cancelFlag, threadId);
  if (!started) return { status: 'cancelled' };
  const cm = await modules.acquire(task.request.memoryBytes);
  try {
    // QuickJS's interrupt handler asks isCancelled while guest code runs: the moment to tell the pool
    // that this thread is taken.
    const control = {
      signal: started.signal,
      isCancelled: () => {
        activity.computing();
        return started.isCancelled();
      },
    };
    const outcome = await runSandbox(cm, task.request, setup.limits, control);
    return { status: 'done', outcome, queueTimeMs };
  } catch (err) {
    if (err instanceof SandboxCancelledError) return { status: 'cancelled' };
    cm.broken = true;
    // Only the message crosses back: it is logged by the pool, never shown to the caller.
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return { status: 'internal', message: `${err instanceof Error ? err.message : String(err)}${cause}` };
  } finally {
    started.finish();
    if (modules.release(cm)) prepareWhenIdle(cm);
  }
}
