/**
 * Which workers are stuck in a long synchronous stretch right now, in shared memory, so the pool can
 * hand new calls to the others. A worker runs several calls at once (they interleave while waiting for
 * host I/O), but guest code, a built-in's own work and result encoding run on its one thread: a call
 * placed on a worker that is busy for a second waits that second. Counting calls per worker is not
 * enough; {@link chooseWorker} also looks here.
 *
 * Each worker claims a slot and writes when its thread was last free (a heartbeat timer that only runs
 * when the thread is free) and when it started a task's synchronous part. A worker is "blocked" when
 * its thread has not been free for BLOCKED_AFTER_MS — known at once when a task starts on it or its
 * guest code runs (QuickJS's interrupt handler), within BLOCKED_AFTER_MS otherwise (a built-in's or the
 * result encoding's own work). A call placed on a worker just before that worker starts a long stretch
 * still waits for it: a worker cannot hand back a task it has been given.
 */
const SLOTS = 1024;
/** A thread not free for this long is treated as blocked; a trivial call's synchronous part is ~0.1 ms. */
export const BLOCKED_AFTER_MS = 10;
const HEARTBEAT_MS = 5;

/** The shared memory the pool creates and hands to each worker (in the workers' `workerData`). */
export interface ActivityBoardMemory {
  owners: SharedArrayBuffer;
  freeAt: SharedArrayBuffer;
  /** Per slot: the calls the worker holds parked, waiting for host work (they take no compute slot). */
  parked: SharedArrayBuffer;
}

/** Epoch ms on a clock every thread shares. */
const now = (): number => performance.timeOrigin + performance.now();

export function createActivityBoardMemory(): ActivityBoardMemory {
  return { owners: new SharedArrayBuffer(SLOTS * 4), freeAt: new SharedArrayBuffer(SLOTS * 8), parked: new SharedArrayBuffer(SLOTS * 4) };
}

/** Main thread: reads the board. */
export class ActivityBoard {
  private readonly owners: Int32Array;
  private readonly freeAt: Float64Array;
  private readonly parked: Int32Array;
  /** threadId → slot, learnt lazily (a worker claims its slot when it starts). */
  private readonly slots = new Map<number, number>();

  constructor(memory: ActivityBoardMemory) {
    this.owners = new Int32Array(memory.owners);
    this.freeAt = new Float64Array(memory.freeAt);
    this.parked = new Int32Array(memory.parked);
  }

  /** Calls the worker holds parked (waiting for host work); 0 for an unknown worker. */
  parkedOn(threadId: number): number {
    const slot = this.slotOf(threadId);
    return slot === undefined ? 0 : Math.max(0, Atomics.load(this.parked, slot));
  }

  /** How long the worker's thread has not been free, in ms; 0 for an unknown worker. */
  busyFor(threadId: number, at = now()): number {
    const slot = this.slotOf(threadId);
    if (slot === undefined) return 0;
    const free = this.freeAt[slot]!;
    return free === 0 ? 0 : Math.max(0, at - free);
  }

  /** Frees a destroyed worker's slot for a later worker. */
  release(threadId: number): void {
    const slot = this.slotOf(threadId);
    this.slots.delete(threadId);
    if (slot !== undefined) Atomics.store(this.parked, slot, 0);
    if (slot !== undefined) Atomics.compareExchange(this.owners, slot, threadId, 0);
  }

  private slotOf(threadId: number): number | undefined {
    const known = this.slots.get(threadId);
    if (known !== undefined && Atomics.load(this.owners, known) === threadId) return known;
    for (let i = 0; i < SLOTS; i++) {
      if (Atomics.load(this.owners, i) === threadId) {
        this.slots.set(threadId, i);
        return i;
      }
    }
    return undefined;
  }
}

/** Worker side: the worker's own slot. */
export class WorkerActivity {
  private readonly freeAt: Float64Array;
  private readonly parkedCalls: Int32Array;
  private readonly slot: number;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(memory: ActivityBoardMemory, threadId: number) {
    const owners = new Int32Array(memory.owners);
    this.freeAt = new Float64Array(memory.freeAt);
    this.parkedCalls = new Int32Array(memory.parked);
    let slot = -1;
    for (let i = 0; i < SLOTS && slot < 0; i++) {
      if (Atomics.compareExchange(owners, i, 0, threadId) === 0) slot = i;
    }
    this.slot = slot;
    if (slot < 0) return; // more than SLOTS live workers: this one is simply never avoided
    this.freeAt[slot] = now();
    this.timer = setInterval(this.markFree, HEARTBEAT_MS);
    this.timer.unref();
  }

  /**
   * Called when the thread starts computing for a call (a task starts, and from QuickJS's interrupt
   * handler while guest code runs): the thread counts as taken until the event loop turns again.
   * Cheap enough for the interrupt handler: one store, and one immediate per turn.
   */
  computing(): void {
    if (this.slot < 0 || this.clearPending) return;
    // Back-date the last free moment so the balancer sees the thread as blocked at once; the next
    // turn of the event loop marks it free again.
    this.freeAt[this.slot] = now() - BLOCKED_AFTER_MS;
    this.clearPending = true;
    setImmediate(this.markFree);
  }

  private clearPending = false;

  /** A call of this worker parked (+1) or came back (-1): the pool places calls by the others (call-lane.ts). */
  parked(delta: 1 | -1): void {
    if (this.slot >= 0) Atomics.add(this.parkedCalls, this.slot, delta);
  }

  private readonly markFree = (): void => {
    this.clearPending = false;
    this.freeAt[this.slot] = now();
  };
}

/** What the choice needs to know of a worker (a CallLane). */
export interface PlaceableWorker {
  /** The worker's thread id. */
  readonly id: number;
  /** Calls placed on it and not answered yet, less those parked waiting for host work (CallLane.load). */
  readonly load: number;
  readonly closed: boolean;
}

/**
 * The least-busy choice, minus workers whose thread is blocked: among the workers with room, an idle
 * one first, then the least busy unblocked one. When every worker with room is blocked, the one
 * blocked for the shortest time: a worker that just started a task is "blocked" too (so that a long
 * stretch is seen at once), and it is the likeliest to be free soon; the one blocked longest is the
 * likeliest to stay so. Queueing the call instead could wait longer than either. `skip`: a worker the call
 * was just taken back from.
 */
export function chooseWorker<W extends PlaceableWorker>(board: ActivityBoard, workers: Iterable<W>, maximumUsage: number, skip?: W): W | undefined {
  const at = now();
  let best: W | undefined;
  let bestUsage = maximumUsage;
  let fallback: W | undefined;
  let fallbackBusy = Infinity;
  for (const worker of workers) {
    if (worker === skip || worker.closed || worker.load >= maximumUsage) continue;
    const busy = board.busyFor(worker.id, at);
    if (busy >= BLOCKED_AFTER_MS) {
      if (busy < fallbackBusy) {
        fallback = worker;
        fallbackBusy = busy;
      }
      continue;
    }
    if (worker.load === 0) return worker;
    if (worker.load < bestUsage) {
      best = worker;
      bestUsage = worker.load;
    }
  }
  return best ?? fallback;
}
