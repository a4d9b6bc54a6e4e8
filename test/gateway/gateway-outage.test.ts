/**
 * NATS trouble at the webhook route: never a 202 for a job that was not stored (docs/design.md "NATS
 * unreachable"), 503 with Retry-After meanwhile, recovery without restarting the gateway; a full stream
 * (503 queue_full), a refused publish (500), and a gateway started before NATS.
 */
import t from 'tap';
import { jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { JOBS_STREAM } from '../../src/nats/streams.js';
import { startGateway } from '../../gateway/index.js';
import { freePort, startNatsServer } from '../helpers/nats-server.js';
import { testClient, waitFor } from '../nats/util.js';
import { ADMIN_TOKEN, createWorkflow, gatewayFixture, hook, jobsOf, rpc } from './harness.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

t.test('NATS killed mid-traffic: 503 while down, no 202 without a stored job, 202 again after restart', async (t) => {
  const { base, nats, gateway } = await gatewayFixture(t);
  const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
  const before = await hook(base, wf.id, { body: { n: 'before' } });
  t.equal(before.status, 202);

  // 300 requests in flight while the server is killed: each is answered 202 or 503, and every 202 is stored.
  // The kill comes from the 30th 202's callback, so that many requests are still between claim and ack.
  let accepted202 = 0;
  const inFlight = Array.from({ length: 300 }, (_, i) =>
    hook(base, wf.id, { body: { n: i } }).then((r) => {
      if (r.status === 202 && ++accepted202 === 30) void nats.kill('SIGKILL');
      return r;
    }),
  );
  const answers = await Promise.all(inFlight);
  await nats.kill('SIGKILL');
  const count = (s: number) => answers.filter((r) => r.status === s).length;
  t.equal(count(202) + count(503), 300, `in-flight answers are 202 (${count(202)}) or 503 (${count(503)}), nothing else`);
  t.ok(count(202) >= 30, 'the kill came mid-traffic');

  await waitFor(() => !gateway.ready(), 3000, 'gateway not ready');
  const down = await hook(base, wf.id, { body: { n: 'down' } });
  t.equal(down.status, 503);
  t.equal(down.headers.get('retry-after'), '5');
  t.same(down.json, { error: { code: 'queue_unavailable', message: 'NATS is not reachable: the webhook was not queued' } });
  const keyed = await hook(base, wf.id, { body: {}, headers: { 'idempotency-key': 'k-down' } });
  t.equal(keyed.status, 503, 'with an Idempotency-Key too');
  const ready = await fetch(`${base}/readyz`);
  t.equal(ready.status, 503);
  t.match(await ready.json(), { status: 'not_ready', nats: 'reconnecting' });
  t.equal((await fetch(`${base}/healthz`)).status, 200, 'healthz: the process is up');
  const cp = await rpc(base, 'GetWorkflow', { id: wf.id });
  t.equal(cp.status, 503, 'control plane: UNAVAILABLE');
  t.same(cp.json, { code: 'unavailable', message: 'NATS is not reachable: try again shortly' });

  await nats.restart();
  await waitFor(() => gateway.ready(), 10_000, 'ready again without a gateway restart');
  let after: Awaited<ReturnType<typeof hook>> | undefined;
  await waitFor(async () => (after = await hook(base, wf.id, { body: { n: 'after' } })).status === 202, 5000, '202 after the restart');
  t.equal(after!.status, 202);

  const stored = await jobsOf(t, nats.url, wf.id);
  const storedIds = new Set(stored.map((j) => j.job.executionId));
  const accepted = [before, ...answers, after!].filter((r) => r.status === 202).map((r) => r.json.executionId as string);
  t.same(
    accepted.filter((id) => !storedIds.has(id)),
    [],
    `every 202 (${accepted.length}) has its job in the stream`,
  );
  t.equal(stored.length, storedIds.size, 'no job twice');
  t.notOk(
    stored.some((j) => j.job.trigger.body.n === 'down'),
    'the 503 request was not queued',
  );
});

t.test('a full stream answers 503 queue_full; a refused publish 500', async (t) => {
  const { base, nats } = await gatewayFixture(t, { LDBOX_JOBS_MAX_MSGS: '2' });
  const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
  t.equal((await hook(base, wf.id, { body: {} })).status, 202);
  t.equal((await hook(base, wf.id, { body: {} })).status, 202);
  const full = await hook(base, wf.id, { body: {} });
  t.equal(full.status, 503);
  t.equal(full.headers.get('retry-after'), '30');
  t.same(full.json, { error: { code: 'queue_full', message: 'the job queue is full: the webhook was not queued' } });

  // Another stream captures the job subjects: the publish expects JOBS and is refused.
  const client = testClient(t, nats.url);
  const jsm = await jetstreamManager(await client.whenConnected());
  await jsm.streams.delete(JOBS_STREAM);
  await jsm.streams.add({ name: 'OTHER', subjects: ['ldbox.jobs.>'], retention: RetentionPolicy.Limits, storage: StorageType.Memory });
  const refused = await hook(base, wf.id, { body: {} });
  t.equal(refused.status, 500);
  t.same(refused.json, { error: { code: 'internal_error', message: 'the job queue refused the webhook' } });
});

t.test('a gateway started before NATS: not ready, 503, then 202 once NATS is up', async (t) => {
  const port = await freePort();
  const config = loadGatewayConfig({
    LDBOX_GATEWAY_PORT: '0',
    LDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
    NATS_URL: `nats://127.0.0.1:${port}`,
    LDBOX_MAX_BODY_BYTES: '65536',
    LDBOX_DATA_KEY: TEST_DATA_KEY,
  });
  const gateway = await startGateway(config, silentLogger(), { nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50, connectTimeoutMs: 500 } });
  t.teardown(() => gateway.close(2000));
  const base = `http://127.0.0.1:${gateway.port}`;
  t.equal(gateway.ready(), false);
  t.equal((await fetch(`${base}/readyz`)).status, 503);
  const early = await hook(base, 'wf_' + '0'.repeat(20), { body: {} });
  t.equal(early.status, 503);
  t.equal(early.headers.get('retry-after'), '1');
  t.same(early.json, { error: { code: 'not_ready', message: 'the gateway is starting: workflows are not loaded yet' } });

  const nats = await startNatsServer({ port });
  t.teardown(() => nats.stop());
  await waitFor(() => gateway.ready(), 10_000, 'ready once NATS is up');
  t.equal((await fetch(`${base}/readyz`)).status, 200);
  const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
  t.equal((await hook(base, wf.id, { body: {} })).status, 202);
});
