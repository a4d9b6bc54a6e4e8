import v8 from 'node:v8';

/**
 * How far V8 lets a heap's old generation grow past what its last full GC kept before it runs the next
 * one, process-wide (the main thread and every worker).
 *
 * Why the runner sets it: each HTTP/2 stream's objects are tied to a C++ handle, so they survive young
 * collections and are promoted (~1 KB per call, the same with a bare `node:http2` server), and V8's own
 * heuristics let that garbage pile up to ~4× the live heap before a full GC: the main thread's old space
 * went from 15 MB to 60 MB between full GCs, and the runner's RSS rose ~30 % over the first tens of
 * thousands of calls (bench/execute.ts (c)). At 50 % the heaps stay near their live size, for a full GC
 * of the main thread's ~15 MB live heap about twice as often. Read by V8 at every full GC, so setting it
 * at start-up, before the workers exist, covers every heap of the process.
 */
export function applyHeapGrowth(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
