/**
 * The reference of bench/execute.ts, on a worker thread: a bare fresh QuickJS runtime + context per
 * call (no prelude, no hardening, no limits), `evalCode('1')`, disposed. Runs for `workerData.ms` after
 * a warm-up and posts how many calls it made.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { newQuickJSWASMModuleFromVariant, RELEASE_SYNC } from 'quickjs-emscripten';

const { ms, warmupMs } = workerData as { ms: number; warmupMs: number };
const QuickJS = await newQuickJSWASMModuleFromVariant(RELEASE_SYNC);

function oneCall(): void {
  const runtime = QuickJS.newRuntime();
  const context = runtime.newContext();
  const result = context.evalCode('1');
  context.unwrapResult(result).dispose();
  context.dispose();
  runtime.dispose();
}

function loop(forMs: number): { calls: number; elapsedMs: number } {
  const started = performance.now();
  let calls = 0;
  while (performance.now() - started < forMs) {
    oneCall();
    calls++;
  }
  return { calls, elapsedMs: performance.now() - started };
}

loop(warmupMs);
parentPort!.postMessage(loop(ms));
