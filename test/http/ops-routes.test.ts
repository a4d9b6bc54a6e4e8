/**
 * The ops routes every role serves (src/http/ops-routes.ts): exact statuses, headers and bodies, with fake
 * requests and responses (no server). Each role's own test hits them over its port.
 */
import t from 'tap';
import { Registry } from 'prom-client';
import { createOpsRoutes, type OpsResponse } from '../../src/http/ops-routes.js';
import { silentLogger } from '../../src/logging/logger.js';

interface Written {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
}

function fakeResponse(): { res: OpsResponse; written: Written; ended: Promise<void> } {
  const written: Written = {};
  let done!: () => void;
  const ended = new Promise<void>((r) => (done = r));
  const res: OpsResponse = {
    writeHead(status, headers) {
      written.status = status;
      written.headers = headers;
    },
    end(body) {
      written.body = body.toString();
      done();
    },
  };
  return { res, written, ended };
}

const JSON_HEADERS = (body: string) => ({
  'cache-control': 'no-store',
  'content-type': 'application/json; charset=utf-8',
  'content-length': String(Buffer.byteLength(body)),
});

t.test('healthz, readyz (ready and not), metrics; other requests are left to the role', async (t) => {
  let ready = true;
  const registry = new Registry();
  const ops = createOpsRoutes({ ready: () => ready, readyDetails: () => ({ nats: 'connected', inFlight: 2 }), registry, log: silentLogger() });
  const ask = async (method: string, url: string) => {
    const { res, written, ended } = fakeResponse();
    const route = ops({ method, url }, res);
    if (route !== undefined) await ended;
    return { route, ...written };
  };

  t.same(await ask('GET', '/healthz'), { route: 'healthz', status: 200, headers: JSON_HEADERS('{"status":"ok"}'), body: '{"status":"ok"}' });
  const readyBody = '{"status":"ready","nats":"connected","inFlight":2}';
  t.same(await ask('GET', '/readyz?verbose=1'), { route: 'readyz', status: 200, headers: JSON_HEADERS(readyBody), body: readyBody });
  ready = false;
  const notReady = '{"status":"not_ready","nats":"connected","inFlight":2}';
  t.same(await ask('HEAD', '/readyz'), { route: 'readyz', status: 503, headers: JSON_HEADERS(notReady), body: notReady });
  const m = await ask('GET', '/metrics');
  t.same([m.route, m.status, m.headers], ['metrics', 200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }]);
  t.same(await ask('POST', '/healthz'), { route: undefined }, 'other methods: not an ops request');
  t.same(await ask('GET', '/healthzz'), { route: undefined }, 'other paths: not an ops request');
});

t.test('without details, /readyz is just the status; a failing collection answers 500 internal_error', async (t) => {
  const registry = new Registry();
  registry.metrics = () => Promise.reject(new Error('collector broke'));
  const ops = createOpsRoutes({ ready: () => true, registry, log: silentLogger() });
  const r = fakeResponse();
  ops({ method: 'GET', url: '/readyz' }, r.res);
  await r.ended;
  t.equal(r.written.body, '{"status":"ready"}');
  const m = fakeResponse();
  ops({ method: 'GET', url: '/metrics' }, m.res);
  await m.ended;
  t.same([m.written.status, JSON.parse(m.written.body!)], [500, { error: { code: 'internal_error', message: 'metrics failed' } }]);
});
