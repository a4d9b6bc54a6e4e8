/**
 * Encryption at rest of node `auth` (src/store/workflow-codec.ts, src/crypto/secret-box.ts) against a real
 * nats-server, gateway, executor and runner: nothing of the secret in the KV entry or in nats-server's files,
 * the node still sees it, a wrong key is refused naming the key id, rotation with `ldbox reencrypt`, plaintext
 * records of earlier versions, values tampered with or moved to another node, and ListWorkflows with one
 * workflow sealed with a key that is gone.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { startGateway } from '../../gateway/index.js';
import { dataKey, KeyRing } from '../../src/crypto/secret-box.js';
import { silentLogger } from '../../src/logging/logger.js';
import { KV_BUCKETS } from '../../src/nats/streams.js';
import { isSecretUnavailable } from '../../src/store/store-errors.js';
import { WorkflowRepository } from '../../src/store/workflow-repository.js';
import type { WorkflowRecord } from '../../src/workflows/workflow-model.js';
import { createFlow, sharedRunner, stackFixture, waitForFinish } from '../executor/harness.js';
import { hook, rpc } from '../gateway/harness.js';
import { TEST_DATA_KEY, TEST_DATA_KEY_B } from '../helpers/data-keys.js';
import { ldbox } from '../helpers/ldbox-cli.js';
import { waitFor } from '../nats/util.js';

// Each test has its own nats-server (it reads the server's files) and gateway; the tests that run
// workflows share one runner, and those that start no executor start no runner.
const runner = sharedRunner(t);

const SECRET = 'tok-Zq81vXk3-do-not-store-me';
const KEY_A = dataKey(Buffer.from(TEST_DATA_KEY, 'base64'));
const KEY_B = dataKey(Buffer.from(TEST_DATA_KEY_B, 'base64'));
const enc = new TextEncoder();
const dec = new TextDecoder();

/** The forms in which the secret must never be stored. */
const FORMS = [SECRET, Buffer.from(SECRET).toString('base64'), Buffer.from(SECRET).toString('base64url'), Buffer.from(SECRET).toString('hex')];

/** A node whose output says whether it saw the secret, without the secret in its code or output. */
const REVERSED = [...SECRET].reverse().join('');
const SEES_SECRET = {
  id: 'n1',
  code: `return { seen: [...data.auth.token].reverse().join("") === ${JSON.stringify(REVERSED)}, n: data.auth.n };`,
  auth: { token: SECRET, n: 7 },
};

interface Raw {
  kv: KV;
  webhooks: KV;
  jsm: JetStreamManager;
  repo(keys: KeyRing): WorkflowRepository;
}

async function raw(t: Test, url: string): Promise<Raw> {
  const nc = await connect({ servers: url });
  t.teardown(() => nc.drain());
  const jsm = await jetstreamManager(nc);
  const kvm = new Kvm(jetstream(nc));
  const kv = await kvm.open(KV_BUCKETS.workflows);
  const webhooks = await kvm.open(KV_BUCKETS.webhooks);
  return { kv, webhooks, jsm, repo: (keys) => new WorkflowRepository(kv, webhooks, jsm, keys) };
}

async function storedJson(r: Raw, id: string): Promise<any> {
  const e = await r.kv.get(id);
  return JSON.parse(dec.decode(e!.value));
}

/** Every file under `dir`, concatenated. */
function filesUnder(dir: string): Buffer {
  const out: Buffer[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(readFileSync(p));
    }
  };
  walk(dir);
  return Buffer.concat(out);
}

/** The refusal `p` rejects with (a SecretUnavailableError), as its message. */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isSecretUnavailable(err)) return err.message;
    throw err;
  }
  throw new Error('not refused');
}

t.test("node auth is sealed in the KV entry and in nats-server's files; the node still sees it", async (t) => {
  const s = await stackFixture(t, { runner: await runner() });
  const r = await raw(t, s.nats.url);
  const wf = await createFlow(s.base, [SEES_SECRET]);
  t.same(wf.nodes[0].auth, { token: '[REDACTED]', n: 7 }, 'the response shows auth redacted');

  const entry = await r.kv.get(wf.id);
  const text = dec.decode(entry!.value);
  for (const f of FORMS) t.notOk(text.includes(f), `the KV entry does not hold ${f === SECRET ? 'the secret' : 'an encoding of it'}`);
  const stored = JSON.parse(text);
  t.match(stored.nodes[0].auth, new RegExp(`^ldbox:v1:${KEY_A.id}:[A-Za-z0-9_-]+$`), 'auth is one sealed value naming the key id');

  // The workflow's id and the sealed value are on disk (so the files are not merely unflushed); the secret is not.
  await waitFor(() => filesUnder(s.nats.storeDir).includes(stored.nodes[0].auth), 10_000, 'the sealed value on disk');
  const disk = filesUnder(s.nats.storeDir);
  for (const f of FORMS) t.equal(disk.indexOf(f), -1, `nats-server's files do not hold ${f === SECRET ? 'the secret' : 'an encoding of it'}`);

  const got = await rpc(s.base, 'GetWorkflow', { id: wf.id });
  t.same(got.json.workflow.nodes[0].auth, { token: '[REDACTED]', n: 7 });
  const h = await hook(s.base, wf.id, { body: {} });
  t.equal(h.status, 202);
  const ex = await waitForFinish(s.base, h.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED', JSON.stringify(ex));
  t.same(ex.nodes[0].output, { seen: true, n: 7 }, 'the node got the auth value');
});

t.test('a wrong key is refused naming the key id: the execution fails, the control plane answers failed_precondition', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, runner: await runner() });
  const r = await raw(t, s.nats.url);
  const wf = await createFlow(s.base, [SEES_SECRET]);
  const expected = `workflow ${wf.id} node "n1": the stored secret is sealed with data key ${KEY_A.id}, which is not configured (LDBOX_DATA_KEY or LDBOX_DATA_KEY_OLD)`;
  t.equal(await refusal(r.repo(new KeyRing(KEY_B)).get(wf.id)), expected);

  await s.startExecutor({ LDBOX_DATA_KEY: TEST_DATA_KEY_B });
  const h = await hook(s.base, wf.id, { body: {} });
  const ex = await waitForFinish(s.base, h.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
  t.equal(ex.error, expected);
  t.equal((ex.nodes ?? []).length, 0, 'no node ran');
  t.equal(ex.attempts, 1, 'not retried: another attempt cannot open it either');

  const other = await startGateway({ ...s.config, port: 0, dataKeys: new KeyRing(KEY_B) }, silentLogger(), {
    nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50 },
  });
  t.teardown(() => other.close(2000));
  await waitFor(() => other.ready(), 15_000, 'second gateway ready');
  const got = await rpc(`http://127.0.0.1:${other.port}`, 'GetWorkflow', { id: wf.id });
  t.equal(got.status, 400);
  t.same(got.json, { code: 'failed_precondition', message: expected });
  for (const k of [TEST_DATA_KEY, TEST_DATA_KEY_B]) t.notOk(got.text.includes(k) || JSON.stringify(ex).includes(k), 'no key material in the answers');
});

t.test('rotation: A old and B current reads; ldbox reencrypt moves everything to B', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, noRunner: true });
  const r = await raw(t, s.nats.url);
  const wf = await createFlow(s.base, [SEES_SECRET, { id: 'n2', code: 'return 1', auth: { other: 'x-other-secret' } }]);
  const rotated = new KeyRing(KEY_B, [KEY_A]);
  t.same(
    (await r.repo(rotated).get(wf.id))!.nodes.map((n) => n.auth),
    [{ token: SECRET, n: 7 }, { other: 'x-other-secret' }],
    'A is readable as an old key',
  );

  const help = await ldbox(['reencrypt', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /^usage: ldbox reencrypt /);
  t.match(help.stdout, /LDBOX_DATA_KEY_OLD/);

  const env = { NATS_URL: s.nats.url, LDBOX_DATA_KEY: TEST_DATA_KEY_B, LDBOX_DATA_KEY_OLD: TEST_DATA_KEY };
  const run = await ldbox(['reencrypt'], env);
  t.same(run, { code: 0, signal: null, stdout: `re-encrypted 1 workflow(s) with data key ${KEY_B.id}; 0 already used it\n`, stderr: '' });
  const stored = await storedJson(r, wf.id);
  for (const n of stored.nodes) t.match(n.auth, new RegExp(`^ldbox:v1:${KEY_B.id}:`), `node ${n.id} sealed with B`);
  t.same(
    (await r.repo(new KeyRing(KEY_B)).get(wf.id))!.nodes.map((n) => n.auth),
    [{ token: SECRET, n: 7 }, { other: 'x-other-secret' }],
    'readable with B alone',
  );
  t.match(await refusal(r.repo(new KeyRing(KEY_A)).get(wf.id)), `sealed with data key ${KEY_B.id}, which is not configured`, 'A alone no longer reads it');

  const again = await ldbox(['reencrypt'], env);
  t.equal(again.stdout, `re-encrypted 0 workflow(s) with data key ${KEY_B.id}; 1 already used it\n`, 'a second run has nothing to do');
  const withoutA = await ldbox(['reencrypt'], { NATS_URL: s.nats.url, LDBOX_DATA_KEY: TEST_DATA_KEY });
  t.equal(withoutA.code, 1, 'a workflow it cannot open: exit 1');
  t.equal(
    withoutA.stderr,
    `not re-encrypted: workflow ${wf.id} node "n1": the stored secret is sealed with data key ${KEY_B.id}, which is not configured (LDBOX_DATA_KEY or LDBOX_DATA_KEY_OLD)\n`,
  );
});

t.test('a plaintext record of an earlier version is read, and sealed on its next write or by reencrypt', async (t) => {
  const s = await stackFixture(t, { runner: await runner() });
  const r = await raw(t, s.nats.url);
  const wf = await createFlow(s.base, [SEES_SECRET]);
  const wf2 = await createFlow(s.base, [{ id: 'm', code: 'return 1', auth: { k: 'legacy-two' } }]);
  const keys = new KeyRing(KEY_A);
  // Store both as a version without encryption did.
  for (const [id, auth] of [
    [wf.id, SEES_SECRET.auth],
    [wf2.id, { k: 'legacy-two' }],
  ] as const) {
    const plain: WorkflowRecord = { ...(await storedJson(r, id)) };
    plain.nodes = plain.nodes.map((n) => ({ ...n, auth }));
    await r.kv.put(id, enc.encode(JSON.stringify(plain)));
  }
  t.same((await r.repo(keys).get(wf.id))!.nodes[0]!.auth, SEES_SECRET.auth, 'read as it is');
  const h = await hook(s.base, wf.id, { body: {} });
  const ex = await waitForFinish(s.base, h.json.executionId);
  t.same(ex.nodes[0].output, { seen: true, n: 7 }, 'it still runs');

  const rot = await rpc(s.base, 'RotateWebhookSecret', { workflowId: wf.id });
  t.equal(rot.status, 200, rot.text);
  t.match((await storedJson(r, wf.id)).nodes[0].auth, new RegExp(`^ldbox:v1:${KEY_A.id}:`), 'sealed by the next write');
  t.same((await storedJson(r, wf2.id)).nodes[0].auth, { k: 'legacy-two' }, 'the other one is untouched so far');

  const run = await ldbox(['reencrypt'], { NATS_URL: s.nats.url, LDBOX_DATA_KEY: TEST_DATA_KEY });
  t.equal(run.stdout, `re-encrypted 1 workflow(s) with data key ${KEY_A.id}; 1 already used it\n`);
  t.match((await storedJson(r, wf2.id)).nodes[0].auth, new RegExp(`^ldbox:v1:${KEY_A.id}:`), 'sealed by reencrypt');
  t.same((await r.repo(keys).get(wf2.id))!.nodes[0]!.auth, { k: 'legacy-two' });
});

t.test('a sealed value tampered with, or moved to another node or workflow, is refused, not garbage', async (t) => {
  const s = await stackFixture(t, { runner: await runner() });
  const r = await raw(t, s.nats.url);
  const keys = new KeyRing(KEY_A);
  const wf = await createFlow(s.base, [SEES_SECRET, { id: 'n2', code: 'return 1', auth: { other: 'x' } }]);
  const wfOther = await createFlow(s.base, [{ id: 'n1', code: 'return 1', auth: { token: 'another' } }]);
  const original = await storedJson(r, wf.id);
  const put = async (id: string, v: unknown) => void (await r.kv.put(id, enc.encode(JSON.stringify(v))));
  const authentic = (node: string, id = wf.id) =>
    `workflow ${id} node "${node}": the stored secret sealed with data key ${KEY_A.id} failed authentication: it was altered, truncated or belongs to another record`;

  const tampered = structuredClone(original);
  const a: string = tampered.nodes[0].auth;
  tampered.nodes[0].auth = a.slice(0, -3) + (a.at(-3) === 'A' ? 'B' : 'A') + a.slice(-2);
  await put(wf.id, tampered);
  t.equal(await refusal(r.repo(keys).get(wf.id)), authentic('n1'), 'tag altered');

  tampered.nodes[0].auth = a.slice(0, -6);
  await put(wf.id, tampered);
  t.equal(await refusal(r.repo(keys).get(wf.id)), authentic('n1'), 'truncated');

  const moved = structuredClone(original);
  moved.nodes[1].auth = original.nodes[0].auth;
  await put(wf.id, moved);
  t.equal(await refusal(r.repo(keys).get(wf.id)), authentic('n2'), "n1's value moved to n2");

  const other = await storedJson(r, wfOther.id);
  other.nodes[0].auth = original.nodes[0].auth;
  await put(wfOther.id, other);
  t.equal(await refusal(r.repo(keys).get(wfOther.id)), authentic('n1', wfOther.id), 'moved to the same node id of another workflow');

  // End to end: the execution of the tampered workflow fails with that message.
  await put(wf.id, moved);
  await waitFor(async () => (await rpc(s.base, 'GetWorkflow', { id: wf.id })).status === 400, 5000, 'control plane sees the tampered record');
  const h = await hook(s.base, wfOther.id, { body: {} });
  t.equal(h.status, 202, 'the webhook route still routes it');
  const ex = await waitForFinish(s.base, h.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
  t.equal(ex.error, authentic('n1', wfOther.id), 'the execution fails naming the key id');
  const g = await rpc(s.base, 'GetWorkflow', { id: wfOther.id });
  t.same(g.json, { code: 'failed_precondition', message: authentic('n1', wfOther.id) });
});

t.test('ListWorkflows lists a workflow sealed with a key rotated away, marked unreadable, and the others as usual', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, noRunner: true });
  const sealedWithA = await createFlow(s.base, [SEES_SECRET]);
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  // A gateway that has only key B, as after a rotation whose old key was dropped too early.
  const other = await startGateway({ ...s.config, port: 0, dataKeys: new KeyRing(KEY_B) }, pino({ level: 'info' }, sink), {
    nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50 },
  });
  t.teardown(() => other.close(2000));
  await waitFor(() => other.ready(), 15_000, 'second gateway ready');
  const base = `http://127.0.0.1:${other.port}`;
  const readable = [await createFlow(base, [SEES_SECRET]), await createFlow(base, [{ id: 'plain', code: 'return 1' }])];
  const expected = `workflow ${sealedWithA.id} node "n1": the stored secret is sealed with data key ${KEY_A.id}, which is not configured (LDBOX_DATA_KEY or LDBOX_DATA_KEY_OLD)`;

  const list = await rpc(base, 'ListWorkflows', {});
  t.equal(list.status, 200, list.text);
  const byId = new Map<string, any>(list.json.workflows.map((w: any) => [w.id, w]));
  t.same([...byId.keys()].sort(), [sealedWithA.id, ...readable.map((w) => w.id)].sort(), 'every workflow is listed');
  const broken = byId.get(sealedWithA.id);
  t.equal(broken.unreadable, expected, 'the unreadable one says why, naming the node and the key id');
  t.equal(broken.name, sealedWithA.name, 'with its other fields');
  t.equal(broken.nodes[0].code, SEES_SECRET.code);
  t.notOk('auth' in broken.nodes[0], 'without auth');
  for (const w of readable) {
    t.notOk('unreadable' in byId.get(w.id), `${w.id} is readable`);
    t.same(byId.get(w.id).nodes[0].auth, w.nodes[0].auth, `${w.id} shows its auth redacted as usual`);
  }
  const filtered = await rpc(base, 'ListWorkflows', { workspace: sealedWithA.workspace, pageSize: 1 });
  t.equal(filtered.status, 200, 'pages too');

  const got = await rpc(base, 'GetWorkflow', { id: sealedWithA.id });
  t.equal(got.status, 400);
  t.same(got.json, { code: 'failed_precondition', message: expected });

  const warned = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'listed a workflow whose stored secrets cannot be opened');
  t.ok(warned.length > 0, 'a warning is logged');
  t.equal(warned[0].level, 40, 'at warn level');
  t.equal(warned[0].workflowId, sealedWithA.id, 'naming the workflow');
  t.equal(warned[0].keyId, KEY_A.id, 'and the key id');
  const everything = lines.join('\n') + list.text + got.text;
  for (const f of [...FORMS, TEST_DATA_KEY, TEST_DATA_KEY_B]) t.notOk(everything.includes(f), 'no secret or key material in logs or answers');
});
