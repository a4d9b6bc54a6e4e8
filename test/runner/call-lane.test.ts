/**
 * The parts of the pool's call lanes that need no worker: the packed batch format (lane-codec.ts), the
 * flag table (flag-table.ts) and a call's placement rules (cancel-flag.ts): only the placement a flag
 * names can start the call, a call taken back cannot be started by the worker it was first sent to, and
 * a cancel reaches a call wherever it waits.
 */
import t from 'tap';
import { markPlaced, reclaim, requestCancel, startTask, startedAt, isCancelledWhileQueued, isStarted } from '../../runner/pool/cancel-flag.js';
import { createFlagTableMemory, FlagTable, FlagViews } from '../../runner/pool/flag-table.js';
import { packAnswers, packCalls, unpackAnswers, unpackCalls } from '../../runner/pool/lane-codec.js';
import type { WireAnswer, WireTask, WorkerTask } from '../../runner/pool/worker-task.js';

t.test('packed calls come back field for field, bodies of every length', async (t) => {
  const views = new FlagViews(createFlagTableMemory(8));
  const calls = [0, 1, 7, 8, 9, 300].map((length, i): { placement: number; task: WireTask } => ({
    placement: 1000 + i,
    task: {
      kind: 'wire',
      slot: i,
      cancelFlag: views.of(i),
      body: Uint8Array.from({ length }, (_, j) => (j * 31 + i) & 0xff),
      encoding: i % 2 === 0 ? 'proto' : 'json',
      grpcFramed: i % 3 === 0,
      deadlineAt: i === 2 ? undefined : 1.7e12 + i / 3,
      submittedAt: 1.6e12 + i / 7,
    },
  }));
  const out: { id: number; task: WorkerTask }[] = [];
  unpackCalls(packCalls(calls), (slot) => views.of(slot), out);
  t.equal(out.length, calls.length);
  out.forEach(({ id, task }, i) => {
    const sent = calls[i]!;
    t.equal(id, sent.placement, `call ${i}: placement`);
    t.same({ ...task, body: [...(task as WireTask).body] }, { ...sent.task, body: [...sent.task.body] }, `call ${i}: fields and body`);
    t.equal(task.cancelFlag, views.of(sent.task.slot), `call ${i}: the flag is the receiver's view of the slot`);
  });
});

t.test('packed answers come back field for field (error kind and memory included, or absent)', async (t) => {
  const kinds = ['thrown', 'syntax', 'timeout', 'memory-limit', 'invalid-result'] as const;
  const ids = ['', 'a', 'req-1234567', 'ünïcode-id', 'b', 'c', 'd', 'e'];
  const answers = ids.map((requestId, i): { placement: number; reply: WireAnswer } => {
    const reply: WireAnswer = {
      status: 'answered',
      requestId,
      body: Uint8Array.from({ length: i * 5 + 1 }, (_, j) => j + i),
      outcome: i % 2 === 0 ? 'ok' : 'error',
      deadlineExceeded: i === 3,
      queueTimeMs: i * 1.25,
    };
    // Every error kind once; an error without one (the pool's hard-stop answer); memory absent once, large once.
    if (i >= 3) reply.errorKind = kinds[i - 3]!;
    if (i !== 2) reply.memoryUsedBytes = i === 7 ? 2 ** 32 + 65536 : i * 65536;
    return { placement: 7 + i, reply };
  });
  const seen: { placement: number; reply: WireAnswer }[] = [];
  unpackAnswers(packAnswers(answers), (placement, reply) => seen.push({ placement, reply }));
  t.same(
    seen.map(({ placement, reply }) => ({ placement, reply: { ...reply, body: [...reply.body] } })),
    answers.map(({ placement, reply }) => ({ placement, reply: { ...reply, body: [...reply.body] } })),
  );
});

t.test('the flag table hands out cleared slots and takes them back', async (t) => {
  const table = new FlagTable(createFlagTableMemory(2));
  const a = table.take()!;
  const b = table.take()!;
  t.not(a.slot, b.slot);
  t.equal(table.take(), undefined, 'no third slot');
  a.flag.fill(-1);
  table.give(a.slot);
  const again = table.take()!;
  t.equal(again.slot, a.slot);
  t.ok(
    again.flag.every((v) => v === 0),
    'a reused slot starts cleared',
  );
  t.ok(
    b.flag.every((v) => v === 0),
    'its neighbour is untouched',
  );
});

t.test('only the placement a flag names starts the call', async (t) => {
  const table = new FlagTable(createFlagTableMemory(1));
  const { flag } = table.take()!;
  t.ok(markPlaced(flag, 5), 'placed under 5');
  t.ok(reclaim(flag, 5), 'taken back before it started');
  t.ok(markPlaced(flag, 6), 'placed again under 6 (maybe on the same worker)');
  t.equal(startTask(flag, 5, 1), 'elsewhere', 'the first copy is dropped');
  const started = startTask(flag, 6, 1);
  t.type(started, 'object', 'the current placement starts it');
  t.ok(isStarted(flag));
  t.notOk(reclaim(flag, 6), 'a started call cannot be taken back');
  t.equal(startTask(flag, 6, 2), 'elsewhere', 'nor started twice');
  if (typeof started === 'object') started.finish();
});

t.test('a cancel reaches a call in the queue, placed, or running', async (t) => {
  const table = new FlagTable(createFlagTableMemory(3));
  const queued = table.take()!.flag;
  requestCancel(queued);
  t.ok(isCancelledWhileQueued(queued), 'queued: cancelled');
  t.notOk(markPlaced(queued, 1), 'and never placed');

  const placed = table.take()!.flag;
  markPlaced(placed, 2);
  requestCancel(placed);
  t.equal(startTask(placed, 2, 1), 'cancelled', 'placed: the worker answers cancelled');
  t.notOk(reclaim(placed, 2), 'and it cannot be taken back');

  const running = table.take()!.flag;
  markPlaced(running, 3);
  const started = startTask(running, 3, 1);
  if (typeof started !== 'object') throw new Error('not started');
  t.notOk(started.isCancelled());
  requestCancel(running);
  t.ok(started.isCancelled(), 'running: the sandbox sees the stop');
  started.finish();
});

t.test("the watchdog's clock starts again when the guest code starts, not when the worker took the call", async (t) => {
  const flag = new FlagTable(createFlagTableMemory(1)).take()!.flag;
  t.equal(startedAt(flag), 0, 'no start before a worker takes it');
  markPlaced(flag, 1);
  const started = startTask(flag, 1, 1);
  if (typeof started !== 'object') throw new Error('not started');
  const taken = startedAt(flag);
  t.ok(taken > 0, 'taken: stamped');
  // A module being made ready in between (seconds on a busy machine for a worker's first call).
  const readyAt = performance.timeOrigin + performance.now() + 5;
  while (performance.timeOrigin + performance.now() < readyAt);
  started.guestStarting();
  t.ok(startedAt(flag) >= readyAt, 'the guest start is what the hard-stop deadline counts from');
  started.finish();
});
