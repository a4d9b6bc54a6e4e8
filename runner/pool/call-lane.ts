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
import type { LaneBatch, LaneReplies, LaneTask, WorkerReply, WorkerTask } from './worker-task.js';

/** The worker went away (crashed, was stopped, or the pool closed) before answering the call. */
export class WorkerLostError extends Error {
  override name = 'WorkerLostError';
}

/** A call placed on the lane and not answered yet. */
export interface PlacedCall {
  task: WorkerTask;
  /** Moved with the task: such a call cannot be taken back (the buffer is gone from this thread). */
  transfer: ArrayBuffer | undefined;
  resolve: (reply: WorkerReply) => void;
  reject: (err: Error) => void;
}

export class CallLane {
  /** Calls placed on this worker and not answered yet. */
  inFlight = 0;
  closed = false;
  private readonly pending = new Map<number, PlacedCall>();
  private outbox: LaneTask[] = [];
  private transfers: ArrayBuffer[] = [];
  private flushScheduled = false;

  constructor(
    /** The worker's thread id (Piscina's worker `id`). */
    readonly id: number,
    private readonly port: MessagePort,
    /** Called after a batch of replies was handed out: the lane has room again. */
    private readonly onRoom: () => void,
  ) {
    port.on('message', (replies: LaneReplies) => this.answer(replies));
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
    const id = placement;
    this.outbox.push({ id, task: call.task });
    if (call.transfer) this.transfers.push(call.transfer);
    if (this.inFlight++ === 0) this.port.ref();
    this.pending.set(id, call);
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
    this.inFlight -= taken.length;
    if (taken.length > 0 && this.inFlight === 0) this.port.unref();
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
    this.transfers = [];
    this.inFlight = 0;
    for (const call of lost) call.reject(new WorkerLostError('the worker went away during the call'));
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.closed || this.outbox.length === 0) return;
    const batch: LaneBatch = this.outbox;
    const transfers = this.transfers;
    this.outbox = [];
    this.transfers = [];
    this.port.postMessage(batch, transfers);
  };

  private answer(replies: LaneReplies): void {
    for (const { id, reply } of replies) {
      const call = this.pending.get(id);
      if (!call) continue;
      this.pending.delete(id);
      if (--this.inFlight === 0) this.port.unref();
      call.resolve(reply);
    }
    this.onRoom();
  }
}
