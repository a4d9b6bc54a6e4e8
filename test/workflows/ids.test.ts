/**
 * Id formats (src/workflows/ids.ts): workflow, webhook and execution ids, the format checks the gateway
 * runs before any lookup, and the time order of execution ids.
 */
import t from 'tap';
import {
  executionIdTime,
  ID_ALPHABET,
  isExecutionId,
  isWebhookId,
  isWorkflowId,
  newExecutionId,
  newWebhookId,
  newWorkflowId,
} from '../../src/workflows/ids.js';

t.test('the alphabet: Crockford base32, lower case, in ASCII order', async (t) => {
  t.equal(ID_ALPHABET, '0123456789abcdefghjkmnpqrstvwxyz');
  t.equal(ID_ALPHABET.length, 32);
  t.same([...ID_ALPHABET].sort().join(''), ID_ALPHABET, 'sorted');
});

t.test('workflow ids: wf_ + 20 characters', async (t) => {
  const ids = Array.from({ length: 2000 }, () => newWorkflowId());
  for (const id of ids.slice(0, 50)) t.match(id, /^wf_[0-9a-hjkmnp-tv-z]{20}$/);
  t.ok(ids.every(isWorkflowId), 'all pass the check');
  t.equal(new Set(ids).size, ids.length, 'no repeats');
  t.equal(
    newWorkflowId((n) => Buffer.alloc(n, 0)),
    'wf_00000000000000000000',
  );
  t.equal(
    newWorkflowId((n) => Buffer.alloc(n, 0xff)),
    'wf_zzzzzzzzzzzzzzzzzzzz',
  );
  t.equal(
    newWorkflowId((n) => Buffer.from(Array.from({ length: n }, (_, i) => i + 32))),
    'wf_0123456789abcdefghjk',
    'byte & 31',
  );
  const counts = new Map<string, number>();
  for (const id of ids) for (const c of id.slice(3)) counts.set(c, (counts.get(c) ?? 0) + 1);
  t.equal(counts.size, 32, 'every symbol occurs');
});

t.test('isWorkflowId refuses everything else', async (t) => {
  const bad = [
    '',
    'wf_',
    'wf_0000000000000000000', // 19
    'wf_000000000000000000000', // 21
    'WF_00000000000000000000',
    'wf_0000000000000000000A', // upper case
    'wf_0000000000000000000i', // not in the alphabet
    'wf_0000000000000000000l',
    'wf_0000000000000000000o',
    'wf_0000000000000000000u',
    'wh_00000000000000000000',
    ' wf_00000000000000000000',
    'wf_00000000000000000000\n',
    'wf_0000000000000000000/',
    '../wf_00000000000000000000',
    'wf-00000000000000000000',
  ];
  for (const s of bad) t.notOk(isWorkflowId(s), JSON.stringify(s));
  t.ok(isWorkflowId('wf_0123456789abcdefghjk'));
});

t.test('webhook ids: wh_ + 20 characters', async (t) => {
  const id = newWebhookId();
  t.match(id, /^wh_[0-9a-hjkmnp-tv-z]{20}$/);
  t.ok(isWebhookId(id));
  t.notOk(isWebhookId(id.replace('wh_', 'wf_')));
  t.notOk(isWorkflowId(id));
});

t.test('execution ids: ex_ + 10 time characters + 16 random', async (t) => {
  const now = new Date('2025-03-01T12:00:00.123Z');
  const id = newExecutionId(now);
  t.match(id, /^ex_[0-9a-hjkmnp-tv-z]{26}$/);
  t.ok(isExecutionId(id));
  t.same(executionIdTime(id), now, 'the time is recoverable');
  t.equal(
    newExecutionId(new Date(0), (n) => Buffer.alloc(n, 0)),
    `ex_${'0'.repeat(26)}`,
  );
  t.equal(newExecutionId(new Date(31), (n) => Buffer.alloc(n, 0)).slice(3, 13), '000000000z');
  t.equal(newExecutionId(new Date(32), (n) => Buffer.alloc(n, 0)).slice(3, 13), '0000000010');
  t.equal(executionIdTime('ex_nope'), undefined);
  t.notOk(isExecutionId(newWorkflowId()));
  t.throws(() => newExecutionId(new Date(-1)), { message: 'cannot encode the time -1 in an execution id' });

  const times = [0, 1, 31, 32, 1_000, 1_700_000_000_000, 1_700_000_000_001, 4_102_444_800_000];
  const sorted = times.map((ms) => newExecutionId(new Date(ms)));
  t.same([...sorted].sort(), sorted, 'ids sort by time');
  t.same(
    sorted.map((s) => executionIdTime(s)?.getTime()),
    times,
  );
});
