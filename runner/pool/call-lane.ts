/**
 * The pool's side of one worker's call lane: a MessagePort of its own between the main thread and one
 * worker, carrying calls to it and replies back **in batches** — every call placed on the worker during
 * one turn of the event loop goes in one message, and the worker answers every call that ended during
 * one of its turns in one message (worker-lane.ts).
 *
 * Why not a Piscina task per call: a message per call costs a structured-clone, a C++→JS crossing with
 * async tracking and Piscina's task bookkeeping on both threads, ~40 µs of the main thread's time per
 * call on this project's 2-core machine, more than the runner's whole RPC edge; at 64 calls in flight
 * the lane's batches make that a few µs. Piscina still owns the workers: it starts them with their
 * resource limits and replaces one that dies (the lane then fails or re-runs its calls, runner-pool.ts).
 */
import type { MessagePort } from 'node:worker_threads';
import { isStarted, reclaim } from './cancel-flag.js';
import { type LaneBatchMessage, type LaneRepliesMessage, packCalls, packsCall, unpackAnswers } from './lane-codec.js';
import type { WireTask, WorkerReply, WorkerTask } from './worker-task.js';

/** The worker went away (crashed, was stopped, or the pool closed) before answering the call. */
export class WorkerLostError extends Error {
  override name = 'WorkerLostError';
}

/** A call placed on the lane and not answered yet. */
export interface PlacedCall {
  task: WorkerTask;
  /** Who the call is for (ExecuteRequest.tenant, '' = the shared tenant): the pool's queue is fair between them. */
  tenant: string;
  /** Moved with the task: such a call cannot be taken back (the buffer is gone from this thread). */
  transfer: ArrayBuffer | undefined;
  resolve: (reply: WorkerReply) => void;
  reject: (err: Error) => void;
}

export class CallLane {
  closed = false;
  /** Calls placed on this worker and not answered yet, by placement. */
  private readonly pending = new Map<number, PlacedCall>();
  private outbox: PlacedCall[] = [];
  private outboxPlacements: number[] = [];
  private flushScheduled = false;

  /** Calls placed on this worker and not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * What the worker has to compute: its calls in flight less those parked waiting for host work, which
   * take no compute slot. Calls are placed by this, so thousands of waiting calls do not make a worker
   * look full, and calls that compute are not all committed to one worker ahead of time.
   */
  get load(): number {
    return Math.max(0, this.pending.size - this.parkedCalls());
  }

  /** Calls of this worker parked, waiting for host work. */
  get parked(): number {
    return this.parkedCalls();
  }

  constructor(
    /** The worker's thread id (Piscina's worker `id`). */
    readonly id: number,
    private readonly port: MessagePort,
    /** Called after a batch of replies was handed out: the lane has room again. */
    private readonly onRoom: () => void,
    /** How many of its calls the worker holds parked, waiting for host work (worker-activity.ts). */
    private readonly parkedCalls: () => number = () => 0,
  ) {
    port.on('message', (replies: LaneRepliesMessage) => this.answer(replies));
    port.on('close', () => this.close());
    // An idle lane does not keep the process alive (the RPC server does, or nothing should).
    port.unref();
  }

  /**
   * Places one call on the worker under `placement` (its flag already says so, see cancel-flag.ts's
   * markPlaced); it is sent with the others of this turn.
   */
  send(call: PlacedCall, placement: number): void {
    if (this.closed) return call.reject(new WorkerLostError('the worker is gone'));
    this.outbox.push(call);
    this.outboxPlacements.push(placement);
    if (this.pending.size === 0) this.port.ref();
    this.pending.set(placement, call);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  /** How many of its calls the worker is running (has started). */
  running(): number {
    let n = 0;
    for (const call of this.pending.values()) if (isStarted(call.task.cancelFlag)) n++;
    return n;
  }

  /** Takes back the calls the worker has not started (those that can be placed elsewhere), oldest first. */
  reclaimUnstarted(): PlacedCall[] {
    const taken: PlacedCall[] = [];
    for (const [id, call] of this.pending) {
      if (call.transfer || !reclaim(call.task.cancelFlag, id)) continue;
      this.pending.delete(id);
      taken.push(call);
    }
    if (taken.length > 0 && this.pending.size === 0) this.port.unref();
    return taken;
  }

  /** Fails every call not yet answered (the worker is gone); nothing more is sent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.port.close();
    const lost = [...this.pending.values()];
    this.pending.clear();
    this.outbox = [];
    this.outboxPlacements = [];
    for (const call of lost) call.reject(new WorkerLostError('the worker went away during the call'));
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.closed || this.outbox.length === 0) return;
    const packed: { placement: number; task: WireTask }[] = [];
    const message: LaneBatchMessage = { packed: undefined, others: [] };
    const transfers: ArrayBuffer[] = [];
    this.outbox.forEach((call, i) => {
      const placement = this.outboxPlacements[i]!;
      // A call taken back before it was sent is not sent (its flag no longer names this placement).
      if (!this.pending.has(placement)) return;
      if (packsCall(call.task, call.transfer)) {
        packed.push({ placement, task: call.task });
        return;
      }
      const { cancelFlag: _flag, ...task } = call.task;
      message.others.push({ placement, task });
      if (call.transfer) transfers.push(call.transfer);
    });
    this.outbox = [];
    this.outboxPlacements = [];
    if (packed.length > 0) {
      message.packed = packCalls(packed);
      transfers.push(message.packed);
    }
    this.port.postMessage(message, transfers);
  };

  private answer(replies: LaneRepliesMessage): void {
    if (replies.packed) unpackAnswers(replies.packed, this.settle);
    for (const { placement, reply } of replies.others) this.settle(placement, reply);
    this.onRoom();
  }

  private readonly settle = (placement: number, reply: WorkerReply): void => {
    const call = this.pending.get(placement);
    if (!call) return;
    this.pending.delete(placement);
    if (this.pending.size === 0) this.port.unref();
    call.resolve(reply);
  };
}
