/**
 * The worker's side of its call lane (call-lane.ts): takes batches of calls and answers every call that
 * ended during one turn of this thread's event loop in one message (or sooner, every few replies, so
 * the pool can answer while the rest run).
 *
 * Calls run one after the other while they compute, and side by side while they wait: the next call
 * starts when the one before it ends, when it parks to wait for host work (a request, a timer: it says so,
 * and the next starts in a microtask), or, if it is still running when the event loop comes round, then —
 * up to `maxRunning` started at once (the worker's share of LDBOX_RUNNER_MAX_INFLIGHT, parked ones
 * included). The calls of a memory cap share one WASM module whose memory stays in the CPU's caches (16
 * calls at once on 16 modules cost ~40 % more CPU per call here), and a call waiting for I/O holds nobody up. Calls placed here that have not started
 * yet may be taken back by the pool and placed elsewhere (cancel-flag.ts); `run` then answers
 * `undefined` and nothing is sent.
 */
import { MessageChannel, parentPort, threadId } from 'node:worker_threads';
import { type LaneBatchMessage, type LaneRepliesMessage, packAnswers, packsReply, unpackCalls } from './lane-codec.js';
import type { LaneOffer, WireAnswer, WorkerReply, WorkerTask } from './worker-task.js';

/** A reply, and the buffer to move with it (large response bodies: see worker.ts). */
export interface LaneAnswer {
  reply: WorkerReply;
  transfer?: ArrayBuffer | undefined;
}

/** Replies are sent at the latest when this many are ready, so the pool can answer while the rest run. */
const REPLIES_PER_MESSAGE = 16;

/** Opens the lane and offers its other end to the pool; `run` answers one call. */
export function openWorkerLane(
  run: (task: WorkerTask, placement: number, yielded: () => void) => Promise<LaneAnswer | undefined>,
  maxRunning: number,
  flagOf: (slot: number) => Int32Array,
): void {
  if (!parentPort) throw new Error('a call lane is opened in a worker thread');
  const { port1, port2 } = new MessageChannel();

  let packed: { placement: number; reply: WireAnswer }[] = [];
  let message: LaneRepliesMessage = { packed: undefined, others: [] };
  let transfers: ArrayBuffer[] = [];
  let ready = 0;
  let flushScheduled = false;
  /** Calls parked since the last message: the pool is told even with no reply, since it places by load. */
  let parkedSinceFlush = false;
  const flush = (): void => {
    flushScheduled = false;
    if (ready === 0 && !parkedSinceFlush) return;
    parkedSinceFlush = false;
    if (packed.length > 0) {
      message.packed = packAnswers(packed);
      transfers.push(message.packed);
    }
    port1.postMessage(message, transfers);
    packed = [];
    message = { packed: undefined, others: [] };
    transfers = [];
    ready = 0;
  };
  const answer = (placement: number, result: LaneAnswer | undefined): void => {
    if (!result) return;
    const { reply, transfer } = result;
    if (packsReply(reply, transfer)) packed.push({ placement, reply });
    else message.others.push({ placement, reply });
    if (transfer) transfers.push(transfer);
    if (++ready >= REPLIES_PER_MESSAGE) return flush();
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  const waiting: { id: number; task: WorkerTask }[] = [];
  let waitingHead = 0;
  let running = 0;
  /** The call computing now, if any: the next one starts when it ends or yields (see watchTurn). */
  let computing: object | undefined;
  let turnWatched = false;

  const startNext = (): void => {
    while (computing === undefined && running < maxRunning && waitingHead < waiting.length) {
      const { id, task } = waiting[waitingHead++]!;
      if (waitingHead === waiting.length) {
        waiting.length = 0;
        waitingHead = 0;
      }
      const call = {};
      computing = call;
      running++;
      // A call that parks to wait for host work says so: the next one starts at once, not a turn of the
      // event loop later (with thousands of sockets open, a turn is long, and one start per turn capped
      // the rate at which waiting calls got going).
      const yielded = (): void => {
        // The pool places calls by what a worker has to compute (CallLane.load): a parked call frees room.
        parkedSinceFlush = true;
        if (!flushScheduled) {
          flushScheduled = true;
          setImmediate(flush);
        }
        if (computing !== call) return;
        computing = undefined;
        queueMicrotask(startNext);
      };
      void run(task, id, yielded)
        .then(
          (result) => answer(id, result),
          (err: unknown) => answer(id, { reply: { status: 'internal', message: err instanceof Error ? err.message : String(err) } }),
        )
        .finally(() => {
          running--;
          if (computing === call) computing = undefined;
          startNext();
        });
      if (computing === call) watchTurn();
    }
  };
  /** At the next turn of the event loop, a call still running is waiting for something: start the next. */
  const watchTurn = (): void => {
    if (turnWatched) return;
    turnWatched = true;
    setImmediate(() => {
      turnWatched = false;
      if (computing === undefined) return;
      computing = undefined;
      startNext();
    });
  };

  port1.on('message', (batch: LaneBatchMessage) => {
    if (batch.packed) unpackCalls(batch.packed, flagOf, waiting);
    for (const { placement, task } of batch.others) waiting.push({ id: placement, task: { ...task, cancelFlag: flagOf(task.slot) } as WorkerTask });
    startNext();
  });
  const offer: LaneOffer = { ldboxCallLane: port2, threadId };
  parentPort.postMessage(offer, [port2]);
}
