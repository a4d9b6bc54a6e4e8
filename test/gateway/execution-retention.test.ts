/**
 * LDBOX_EXECUTION_RETENTION: the gateway creates the executions bucket with it as the max age, and a
 * gateway started with another value changes the existing bucket in place (and says so at info).
 */
import { Writable } from 'node:stream';
import { jetstreamManager } from '@nats-io/jetstream';
import pino from 'pino';
import t from 'tap';
import { loadGatewayConfig, startGateway } from '../../gateway/index.js';
import { KV_BUCKETS } from '../../src/nats/streams.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { testClient, waitFor } from '../nats/util.js';
import { gatewayFixture } from './harness.js';

const NS_PER_MS = 1_000_000;
const HOUR = 3_600_000;

t.test('the executions bucket follows LDBOX_EXECUTION_RETENTION of the gateway that starts', async (t) => {
  const gw = await gatewayFixture(t, { LDBOX_EXECUTION_RETENTION: '48h' });
  const client = testClient(t, gw.nats.url);
  const jsm = await jetstreamManager(await client.whenConnected());
  const maxAge = async () => (await jsm.streams.info(`KV_${KV_BUCKETS.executions}`)).config.max_age / NS_PER_MS;
  t.equal(await maxAge(), 48 * HOUR, 'created with 48 h');

  const restart = async (retention: string | undefined) => {
    const lines: Array<Record<string, any>> = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    });
    const config = loadGatewayConfig({
      LDBOX_GATEWAY_PORT: '0',
      LDBOX_ADMIN_TOKEN: gw.config.adminToken,
      NATS_URL: gw.nats.url,
      LDBOX_DATA_KEY: TEST_DATA_KEY,
      ...(retention === undefined ? {} : { LDBOX_EXECUTION_RETENTION: retention }),
    });
    const g = await startGateway(config, pino({ level: 'info' }, sink));
    t.teardown(() => g.close(2000));
    await waitFor(() => g.ready(), 15_000, 'gateway ready');
    await g.close(2000);
    return lines.filter((l) => l.msg === 'KV bucket limits changed to the configured ones');
  };

  let changed = await restart('24h');
  t.equal(await maxAge(), 24 * HOUR, 'a gateway with 24h changes the existing bucket');
  t.match(changed, [{ level: 30, bucket: KV_BUCKETS.executions, was: { max_age_ms: 48 * HOUR }, now: { max_age_ms: 24 * HOUR } }], 'and says so at info');

  changed = await restart('24');
  t.equal(await maxAge(), 24 * HOUR, 'plain digits are hours');
  t.same(changed, [], 'nothing to change, nothing logged');

  changed = await restart(undefined);
  t.equal(await maxAge(), 7 * 24 * HOUR, 'unset: back to the default 7 days');
  t.equal(changed.length, 1);
});
