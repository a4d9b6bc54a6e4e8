/**
 * LDBOX_WORKER_NICE (runner/pool/thread-priority.ts): the pool's worker threads run that many nice steps
 * below the runner's main thread, and only they do. Read from /proc, as the kernel sees the threads.
 */
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { setTimeout as delay } from 'node:timers/promises';
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { lowerThreadPriority } from '../../runner/pool/thread-priority.js';
import { startInProcessRunner } from '../helpers/runner-harness.js';

if (process.platform !== 'linux') {
  t.plan(0, 'thread priorities are set on Linux only');
  process.exit(0);
}

/** The nice value of each thread of this process (field 19 of /proc/self/task/<tid>/stat). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // The command name may hold spaces and parentheses: the fields that follow start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    nices.set(Number(tid), Number(fields[16]));
  }
  return nices;
}

const mainNice = threadNices().get(process.pid)!;

/** Threads of this process whose nice is `nice`, once there are `count` of them (polled). */
async function threadsAt(nice: number, count: number): Promise<number[]> {
  for (;;) {
    const at = [...threadNices()].filter(([, n]) => n === nice).map(([tid]) => tid);
    if (at.length >= count) return at;
    await delay(10);
  }
}

t.test('the workers run LDBOX_WORKER_NICE steps below the main thread; the main thread does not move', async (t) => {
  const runner = await startInProcessRunner({ LDBOX_POOL_SIZE: '2', LDBOX_WORKER_NICE: '7' });
  t.teardown(() => runner.close());
  const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => runner.grpc.execute({ code: `return ${i} * 3` })));
  t.same(
    replies.map((r) => toJson(ValueSchema, r.result!)),
    [0, 3, 6, 9, 12, 15, 18, 21],
    'calls run on the lowered workers',
  );
  const lowered = await threadsAt(Math.min(19, mainNice + 7), 2);
  t.equal(lowered.length, 2, 'exactly the two workers are lowered');
  t.notOk(lowered.includes(process.pid), 'not the main thread');
  t.equal(threadNices().get(process.pid), mainNice, 'the main thread keeps its priority');
});

t.test('LDBOX_WORKER_NICE=0 leaves every thread where it was', async (t) => {
  const before = new Set(threadNices().keys());
  const runner = await startInProcessRunner({ LDBOX_POOL_SIZE: '2', LDBOX_WORKER_NICE: '0' });
  t.teardown(() => runner.close());
  t.equal(toJson(ValueSchema, (await runner.grpc.execute({ code: 'return 1' })).result!), 1);
  const fresh = [...threadNices()].filter(([tid]) => !before.has(tid));
  t.ok(fresh.length >= 2, 'the new runner started threads');
  t.same(
    fresh.filter(([, n]) => n !== mainNice),
    [],
    'none of them is lowered',
  );
});

t.test('lowerThreadPriority lowers only its own thread, never past 19, and does nothing for 0 or less', async (t) => {
  t.equal(lowerThreadPriority(0), false, '0 steps: nothing to do');
  t.equal(lowerThreadPriority(-3), false, 'a negative step is not a raise');
  // In a thread of its own: a priority once lowered cannot be raised back without privileges.
  const moduleUrl = new URL('../../runner/pool/thread-priority.js', import.meta.url).href;
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
     const { readlinkSync } = require('node:fs');
     import(${JSON.stringify(moduleUrl)}).then((m) => {
       const lowered = m.lowerThreadPriority(40);
       parentPort.postMessage({ lowered, tid: Number(readlinkSync('/proc/thread-self').split('/').pop()) });
       parentPort.once('message', () => process.exit(0));
     });`,
    { eval: true },
  );
  const { lowered, tid } = (await once(worker, 'message'))[0] as { lowered: boolean; tid: number };
  t.equal(lowered, true, 'the thread was lowered');
  t.equal(threadNices().get(tid), 19, 'to 19 at most');
  t.equal(threadNices().get(process.pid), mainNice, 'the thread that started it keeps its priority');
  worker.postMessage('done');
  await once(worker, 'exit');
});
