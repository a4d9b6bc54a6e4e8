/**
 * The connect-time enforcement of the egress guard, in process (runner/builtins/http/egress-agent.ts):
 * an IP-literal host is refused by the connector before a socket exists, a host name is checked on
 * the addresses its lookup hands to the socket (a name resolving to a private address, a mixed
 * answer, an IPv4-mapped answer), an allowed name connects, and DNS failures read clearly.
 *
 * Safety net: every socket connect in this process is watched; an IP literal or a resolved address
 * outside loopback is recorded as a violation and never reaches the network.
 */
import type { LookupAddress } from 'node:dns';
import net from 'node:net';
import t from 'tap';
import type { BuiltinContext } from '../../../runner/builtins/guest-boundary.js';
import { createEgressAgent, type Resolver, undiciLib } from '../../../runner/builtins/http/egress-agent.js';
import { EgressRefusedError } from '../../../runner/builtins/http/egress-guard.js';
import { request } from '../../../runner/builtins/http/request.js';
import { sendRequest } from '../../../runner/builtins/http/send-request.js';
import { GuestFacingError } from '../../../runner/builtins/guest-boundary.js';
import { startEchoServer } from './echo-server.js';

// Loaded now, as a worker's first request would: the "at once" checks below time refusals, not loading undici.
undiciLib();

const attempts: string[] = [];
const violations: string[] = [];
const isLoopback = (ip: string) => /^127\./.test(ip) || ip === '::1';
type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;
type Lookup = (host: string, options: object, callback: LookupCallback) => void;
const originalConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  const first = args[0];
  // net.connect passes its normalised [options, callback] array.
  const opts = (Array.isArray(first) ? first[0] : first) as { host?: string; lookup?: Lookup } | undefined;
  if (opts && typeof opts === 'object') {
    if (typeof opts.host === 'string' && net.isIP(opts.host)) {
      attempts.push(opts.host);
      if (!isLoopback(opts.host)) {
        violations.push(opts.host);
        opts.host = '127.0.0.1';
      }
    } else if (typeof opts.lookup === 'function') {
      const inner = opts.lookup;
      opts.lookup = (host, o, cb) =>
        inner(host, o, (err, address, family) => {
          const list = typeof address === 'string' ? (address ? [address] : []) : address.map((a) => a.address);
          attempts.push(...list);
          const bad = list.filter((a) => !isLoopback(a));
          if (!err && bad.length > 0) {
            violations.push(...bad);
            cb(new Error('test safety net: a non-loopback address reached a socket'), '', 0);
            return;
          }
          cb(err, address, family);
        });
    }
  }
  return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;

const server = await startEchoServer();
t.teardown(async () => {
  net.Socket.prototype.connect = originalConnect;
  await server.close();
});

function context(allow: string[] = []): BuiltinContext {
  return {
    signal: new AbortController().signal,
    deadline: performance.now() + 5000,
    redact: (s) => s,
    config: { egressAllow: allow, maxResponseBytes: 1 << 20, maxRequestsPerCall: 100 },
    counters: { requests: 0 },
    log: () => undefined,
    onEnd: () => () => undefined,
  };
}

/** A resolver with fixed answers; a missing name fails like the system resolver. */
function fakeDns(answers: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (host: string) => {
    calls.push(host);
    const list = answers[host];
    if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: net.isIP(address) }));
  };
  return Object.assign(resolve, { calls });
}

async function guestError(p: Promise<unknown>): Promise<[string, string] | 'resolved'> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    if (err instanceof GuestFacingError) return [err.guestName, err.message];
    throw err;
  }
}

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** A test that ends by checking the safety net. */
function guardedTest(name: string, fn: (t: Test) => Promise<void>): void {
  t.test(name, async (t) => {
    await fn(t);
    t.same(violations, [], 'no socket was pointed at a non-loopback address');
  });
}

guardedTest('the metadata address is refused before any socket exists', async (t) => {
  attempts.length = 0;
  for (const url of [
    'http://169.254.169.254/latest/meta-data/iam',
    'https://169.254.169.254/',
    'http://[fd00:ec2::254]/',
    'http://0xa9fea9fe/',
    'http://100.100.100.200/',
  ]) {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    const started = performance.now();
    const err = await guestError(request([{ method: 'GET', url }], context()));
    t.same(
      err,
      [
        'Error',
        `ld.request refused ${url.replace(/\?.*$/, '').replace('0xa9fea9fe', '169.254.169.254')}: ${host === '0xa9fea9fe' ? '169.254.169.254' : host} is a cloud metadata address, which the egress guard blocks`,
      ],
      url,
    );
    t.ok(performance.now() - started < 100, 'at once');
  }
  t.same(attempts, [], 'no socket connect was attempted');
});

guardedTest('the connector refuses an IP-literal host itself (not only the URL check before it)', async (t) => {
  const agent = createEgressAgent([]);
  const before = server.connections();
  for (const origin of [`http://127.0.0.1:${server.port}`, `http://0.0.0.0:${server.port}`, `http://[::ffff:7f00:1]:${server.port}`]) {
    const err = await agent.dispatcher.request({ origin, path: '/', method: 'GET' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof EgressRefusedError, `${origin}: refused by the connector`);
  }
  t.equal(server.connections(), before, 'the server saw no connection');
  await agent.dispatcher.close();
});

guardedTest('a host name is checked on what it resolves to, at connect time', async (t) => {
  const dns = fakeDns({
    'evil.example': ['127.0.0.1'],
    'mapped.example': ['::ffff:127.0.0.1'],
    'metadata.google.internal': ['169.254.169.254'],
    'internal.example': ['10.0.0.7'],
  });
  const agent = createEgressAgent([], { resolve: dns });
  const before = server.connections();
  const cases: [string, string][] = [
    ['evil.example', '127.0.0.1, a loopback address'],
    ['mapped.example', '::ffff:127.0.0.1, a loopback address'],
    ['metadata.google.internal', '169.254.169.254, a cloud metadata address'],
    ['internal.example', '10.0.0.7, a private address'],
  ];
  for (const [host, what] of cases) {
    const url = `http://${host}:${server.port}/x?token=abc`;
    const err = await guestError(sendRequest({ method: 'GET', url, headers: {}, body: undefined }, { responseType: 'text', agent }, context()));
    t.same(err, ['Error', `ld.request refused http://${host}:${server.port}/x: ${host} resolves to ${what}, which the egress guard blocks`], host);
  }
  t.same(
    dns.calls,
    cases.map(([h]) => h),
    'each name was resolved once, by the connection itself',
  );
  t.equal(server.connections(), before, 'the server (where the names pointed) saw no connection');
  await agent.dispatcher.close();
});

guardedTest('a mixed answer connects only to the allowed address', async (t) => {
  // 192.0.2.1 is TEST-NET-1 (documentation): blocked, and never routed anywhere.
  const dns = fakeDns({ 'mixed.example': ['192.0.2.1', '127.0.0.1'] });
  const agent = createEgressAgent(['127.0.0.1/32'], { resolve: dns });
  attempts.length = 0;
  const res = await sendRequest(
    { method: 'GET', url: `http://mixed.example:${server.port}/echo`, headers: {}, body: undefined },
    { responseType: 'json', agent },
    context(),
  );
  t.equal(res.status, 200);
  t.equal(JSON.parse((res as { text: string }).text).headers.host, `mixed.example:${server.port}`, 'the Host header is the name');
  t.same(attempts, ['127.0.0.1'], 'the socket was given only 127.0.0.1');
  await agent.dispatcher.close();
});

guardedTest('an allowed host name may reach what it resolves to', async (t) => {
  const dns = fakeDns({ 'svc.corp.example': ['127.0.0.1'] });
  const agent = createEgressAgent(['*.corp.example'], { resolve: dns });
  const res = await sendRequest(
    { method: 'POST', url: `http://svc.corp.example:${server.port}/echo`, headers: { 'content-type': 'text/plain' }, body: 'hi' },
    { responseType: 'text', agent },
    context(),
  );
  t.same([res.status, JSON.parse((res as { text: string }).text).body], [200, 'hi']);
  await agent.dispatcher.close();
});

guardedTest('DNS failures', async (t) => {
  const agent = createEgressAgent([], { resolve: fakeDns({}) });
  const err = await guestError(
    sendRequest({ method: 'GET', url: 'http://nowhere.example/a?b=c', headers: {}, body: undefined }, { responseType: 'text', agent }, context()),
  );
  t.same(err, ['Error', 'ld.request failed: the host name nowhere.example could not be resolved (GET http://nowhere.example/a)']);
  const again = createEgressAgent([], { resolve: async () => Promise.reject(Object.assign(new Error('getaddrinfo EAI_AGAIN x'), { code: 'EAI_AGAIN' })) });
  t.same(
    await guestError(
      sendRequest({ method: 'GET', url: 'https://flaky.example/', headers: {}, body: undefined }, { responseType: 'text', agent: again }, context()),
    ),
    ['Error', 'ld.request failed: the host name flaky.example could not be resolved (temporary DNS failure) (GET https://flaky.example/)'],
  );
  await agent.dispatcher.close();
  await again.dispatcher.close();
});

guardedTest('an invalid allow list makes ld.request unavailable with a clear message, not a crash', async (t) => {
  const err = await guestError(request([{ method: 'GET', url: `http://127.0.0.1:${server.port}/` }], context(['not a host'])));
  t.same(err, ['Error', "ld.request is unavailable: the runner's egress allow list (LDBOX_EGRESS_ALLOW) is invalid"]);
});
