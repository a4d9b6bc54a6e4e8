/**
 * A worker thread's scheduling priority below the runner's main thread.
 *
 * Why: the main thread reads every request and hands it to a worker, and waking that worker (a message on
 * its call lane) makes the kernel pick between the two. At equal priority the woken worker, which had
 * slept, usually wins and takes the main thread's core for the rest of its batch: on the project's 2-core
 * machine a lane's `postMessage` then stalled the main thread ~150–650 µs on average, while responses
 * waited and the other core ran dry. A few nice steps lower for the workers and the main thread keeps
 * its core until it waits for the network; the workers still get every cycle it does not use.
 *
 * Linux gives each thread its own nice value (setpriority on the thread id); elsewhere nothing is done.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** Lowers the calling thread's priority by `steps` nice steps (at most to 19); false when it could not. */
export function lowerThreadPriority(steps: number): boolean {
  if (steps <= 0 || process.platform !== 'linux') return false;
  try {
    // `/proc/thread-self` links to `<pid>/task/<tid>`: the id setpriority needs for this thread alone.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, Math.min(19, getPriority(tid) + steps));
    return true;
  } catch {
    // No /proc (a locked-down container): the workers run at the main thread's priority, as before.
    return false;
  }
}
