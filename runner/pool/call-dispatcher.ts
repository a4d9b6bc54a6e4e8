/**
 * Places calls on the workers' call lanes (call-lane.ts), with a queue for calls that find every lane full
 * (bounded by the pool, runner-pool.ts): FIFO per tenant, the tenants taken in turn (fair-queue.ts).
 *
 * A lane holds up to `laneDepth` calls: the `sandboxes` its worker runs at once and more waiting in the
 * worker. Keeping the workers supplied ahead is what lets three threads (this one and two workers) share
 * two cores without waiting on each other: a worker that runs dry sleeps, and waking a thread costs more
 * than the call (with one batch per worker at a time, 2 workers served ~60 % of the calls they serve
 * with work waiting). Calls waiting inside a worker must not wait behind a long stretch, though: every
 * BALANCE_MS, the calls a worker has not started are taken back (cancel-flag.ts's reclaim) and placed on
 * another worker when their worker is blocked (worker-activity.ts) or has all its sandboxes taken while
 * another has one free.
 */
import type { MessagePort } from 'node:worker_threads';
import { isCancelledWhileQueued, markPlaced } from './cancel-flag.js';
import { CallLane, type PlacedCall, WorkerLostError } from './call-lane.js';
import { FairQueue } from './fair-queue.js';
import { type ActivityBoard, BLOCKED_AFTER_MS, chooseWorker } from './worker-activity.js';
import type { WorkerReply, WorkerTask } from './worker-task.js';

const CANCELLED_REPLY: WorkerReply = { status: 'cancelled' };
const BALANCE_MS = 5;

export interface DispatcherOptions {
  /** Calls one worker computes side by side before it counts as full (parked calls do not count). */
  sandboxes: number;
  /** Calls placed on one worker at most, not counting those parked: those it computes and those waiting in it. */
  laneDepth: number;
}

export class CallDispatcher {
  private readonly lanes = new Map<number, CallLane>();
  private readonly queue = new FairQueue<PlacedCall>();
  private balancer: NodeJS.Timeout | undefined;
  private lastPlacement = 0;

  constructor(
    private readonly board: ActivityBoard,
    private readonly options: DispatcherOptions,
  ) {}

  /** Calls waiting for room on a lane. */
  get queued(): number {
    return this.queue.size;
  }

  /** A worker offered its lane: calls go to it from now on. */
  attach(threadId: number, port: MessagePort): void {
    this.lanes.get(threadId)?.close();
    this.lanes.set(threadId, new CallLane(threadId, port, this.drain, () => this.board.parkedOn(threadId)));
    this.drain();
  }

  /** The worker is gone: its calls not yet answered fail with WorkerLostError. */
  detach(threadId: number): void {
    const lane = this.lanes.get(threadId);
    if (!lane) return;
    this.lanes.delete(threadId);
    lane.close();
  }

  /**
   * Runs a task on a worker. `transfer`, if given, is moved with it. Rejects with WorkerLostError when
   * the worker went away before answering.
   */
  run(task: WorkerTask, transfer?: ArrayBuffer, tenant = ''): Promise<WorkerReply> {
    return new Promise((resolve, reject) => {
      const call: PlacedCall = { task, transfer, tenant, resolve, reject };
      if (this.queued === 0 && this.place(call)) return;
      this.queue.push(call);
    });
  }

  /** Fails every call, queued or placed (the pool is closing for good). */
  close(): void {
    clearInterval(this.balancer);
    for (const lane of this.lanes.values()) lane.close();
    this.lanes.clear();
    const waiting = this.queue.takeAll();
    for (const call of waiting) call.reject(new WorkerLostError('the pool closed'));
  }

  /** Moves queued calls onto lanes with room (other than `avoid`'s). */
  private readonly drain = (avoid?: CallLane): void => {
    while (this.queued > 0) {
      const call = this.queue.peek()!;
      // A call cancelled while it waited never reaches a worker.
      if (isCancelledWhileQueued(call.task.cancelFlag)) call.resolve(CANCELLED_REPLY);
      else if (!this.place(call, avoid)) return;
      this.queue.shift();
    }
  };

  /** Places the call on the best lane with room; false when there is none. */
  private place(call: PlacedCall, avoid?: CallLane): boolean {
    const lane = chooseWorker(this.board, this.lanes.values(), this.options.laneDepth, avoid);
    if (!lane) return false;
    // A new number for every placement, so a worker never starts a call from an older one.
    const placement = (this.lastPlacement = this.lastPlacement >= 0x7fff_ffff ? 1 : this.lastPlacement + 1);
    // Cancelled meanwhile: answered as such, without a worker.
    if (!markPlaced(call.task.cancelFlag, placement)) {
      call.resolve(CANCELLED_REPLY);
      return true;
    }
    lane.send(call, placement);
    this.balancer ??= setInterval(this.balance, BALANCE_MS).unref();
    return true;
  }

  /** Takes unstarted calls back from a worker that cannot start them soon, for the others. */
  private readonly balance = (): void => {
    let anyPlaced = false;
    const at = performance.timeOrigin + performance.now();
    for (const lane of this.lanes.values()) {
      if (lane.inFlight === 0) continue;
      anyPlaced = true;
      // Parked calls wait for host work: they take no compute slot.
      const running = lane.running() - lane.parked;
      if (running === lane.load) continue; // nothing waits in this worker
      const blocked = this.board.busyFor(lane.id, at) >= BLOCKED_AFTER_MS;
      if (!blocked && running < this.options.sandboxes) continue;
      if (!this.anotherCanStart(lane, at)) continue;
      const taken = lane.reclaimUnstarted();
      if (taken.length === 0) continue;
      // Back to the front of their tenants' queues, in their order, then onto the other lanes.
      this.queue.returnToFront(taken);
      this.drain(lane);
    }
    if (!anyPlaced && this.queued === 0) {
      clearInterval(this.balancer);
      this.balancer = undefined;
    }
  };

  /** Whether a worker other than `lane`'s is free and has a sandbox to spare. */
  private anotherCanStart(lane: CallLane, at: number): boolean {
    for (const other of this.lanes.values()) {
      if (other === lane || other.closed) continue;
      if (this.board.busyFor(other.id, at) >= BLOCKED_AFTER_MS) continue;
      if (other.running() - other.parked < this.options.sandboxes) return true;
    }
    return false;
  }
}
