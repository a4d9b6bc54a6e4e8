/** Access logs: one line per request, the `secret` query parameter scrubbed, no header secret, no body. */
import { Writable } from 'node:stream';
import t from 'tap';
import { pino } from 'pino';
import { startGateway } from '../../gateway/index.js';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { startNatsServer } from '../helpers/nats-server.js';
import { waitFor } from '../nats/util.js';
import { ADMIN_TOKEN, createWorkflow, hook } from './harness.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

t.test('logs never hold a secret', async (t) => {
  const nats = await startNatsServer();
  t.teardown(() => nats.stop());
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  const log = pino({ level: 'debug' }, sink);
  const config = loadGatewayConfig({
    LDBOX_GATEWAY_PORT: '0',
    LDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
    NATS_URL: nats.url,
    LDBOX_MAX_BODY_BYTES: '65536',
    LDBOX_DATA_KEY: TEST_DATA_KEY,
  });
  const gateway = await startGateway(config, log, { nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50 } });
  t.teardown(() => gateway.close(2000));
  await waitFor(() => gateway.ready(), 10_000, 'ready');
  const base = `http://127.0.0.1:${gateway.port}`;

  const q = await createWorkflow(base, { authMethod: 'AUTH_METHOD_QUERY_PARAMETER' });
  const h = await createWorkflow(base, { authMethod: 'AUTH_METHOD_HEADER' });
  const ok = await hook(base, q.id, { query: `a=1&secret=${q.webhook.secret}`, body: { password: 'body-secret-value' } });
  t.equal(ok.status, 202);
  t.equal((await hook(base, q.id, { query: `s%65cret=${q.webhook.secret}x` })).status, 400);
  t.equal((await hook(base, h.id, { headers: { 'x-webhook-secret': h.webhook.secret } })).status, 202);
  await waitFor(() => lines.filter((l) => l.includes('"route":"webhook"')).length === 3, 2000, 'three access log lines');

  const all = lines.join('\n');
  for (const s of [q.webhook.secret, h.webhook.secret, ADMIN_TOKEN, 'body-secret-value']) t.notOk(all.includes(s), 'a secret is not logged');
  const entry = JSON.parse(lines.find((l) => l.includes(ok.json.executionId) && l.includes('"route":"webhook"'))!);
  t.match(entry, {
    route: 'webhook',
    method: 'POST',
    url: `/api/hooks/workflows/${q.id}?a=1&secret=[REDACTED]`,
    status: 202,
    workflowId: q.id,
    executionId: ok.json.executionId,
    msg: 'webhook',
  });
  t.equal(entry.level, 20, 'an accepted webhook is logged at debug (the executor logs each execution at info)');
  t.ok(
    lines.some((l) => l.includes('"code":"invalid_secret"') && l.includes('"level":30')),
    'a refused one at info',
  );
  t.ok(
    lines.some((l) => l.includes('s%65cret=[REDACTED]') && l.includes('"code":"invalid_secret"')),
    'the encoded name is scrubbed too',
  );
});
