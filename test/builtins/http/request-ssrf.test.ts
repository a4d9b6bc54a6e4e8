/**
 * SSRF attempts through a real runner with the default egress policy (no LDBOX_EGRESS_ALLOW): loopback
 * by address, by name (localhost resolves to it), in IPv6 and in the odd notations the URL parser
 * normalises; the unspecified address (0.0.0.0 reaches local services on Linux); private and
 * metadata addresses. Each is refused with a clear error before anything reaches the target, and
 * the sandbox keeps serving.
 */
import { lookup } from 'node:dns/promises';
import t from 'tap';
import { startTestRunner } from '../../helpers/runner-harness.js';
import { type EchoServer, startEchoServer } from './echo-server.js';
import { CATCH, ErrorKind, runCode } from './run-code.js';

const runner = await startTestRunner({ LDBOX_POOL_SIZE: '1' });
const v4 = await startEchoServer('127.0.0.1');
const v6: EchoServer | undefined = await startEchoServer('::1').catch(() => undefined);
t.teardown(async () => {
  await runner.close();
  await Promise.all([v4.close(), v6?.close()]);
});
const port = v4.port;
const blocks = 'which the egress guard blocks';
const connections = () => v4.connections() + (v6?.connections() ?? 0);

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

async function stillServes(t: Test) {
  const o = await runCode(runner, `await ld.wait(1); return [typeof ld.request, 1 + 1]`);
  t.same(o.result, ['function', 2], 'the sandbox still serves');
}

async function refused(t: Test, url: string, message: string) {
  const before = connections();
  const o = await runCode(runner, CATCH(`ld.request({ method: 'GET', url: ${JSON.stringify(url)} })`));
  t.same(o.result, ['Error', message, true], url);
  t.equal(connections(), before, `${url}: nothing reached the loopback servers`);
  return o;
}

t.test('loopback by address, in every notation', async (t) => {
  const cases: [string, string][] = [
    [`http://127.0.0.1:${port}/admin?token=x`, `ld.request refused http://127.0.0.1:${port}/admin: 127.0.0.1 is a loopback address, ${blocks}`],
    [`https://127.0.0.1:${port}/`, `ld.request refused https://127.0.0.1:${port}/: 127.0.0.1 is a loopback address, ${blocks}`],
    [`http://127.0.0.2:${port}/`, `ld.request refused http://127.0.0.2:${port}/: 127.0.0.2 is a loopback address, ${blocks}`],
    [`http://2130706433:${port}/`, `ld.request refused http://127.0.0.1:${port}/: 127.0.0.1 is a loopback address, ${blocks}`],
    [`http://0x7f.1:${port}/`, `ld.request refused http://127.0.0.1:${port}/: 127.0.0.1 is a loopback address, ${blocks}`],
    [`http://0177.0.0.1:${port}/`, `ld.request refused http://127.0.0.1:${port}/: 127.0.0.1 is a loopback address, ${blocks}`],
    [`http://127.1:${port}/`, `ld.request refused http://127.0.0.1:${port}/: 127.0.0.1 is a loopback address, ${blocks}`],
    [`http://0x7f000001:${port}/`, `ld.request refused http://127.0.0.1:${port}/: 127.0.0.1 is a loopback address, ${blocks}`],
    [`http://[::1]:${v6?.port ?? port}/`, `ld.request refused http://[::1]:${v6?.port ?? port}/: ::1 is a loopback address, ${blocks}`],
    [`http://[::ffff:7f00:1]:${port}/`, `ld.request refused http://[::ffff:7f00:1]:${port}/: ::ffff:7f00:1 is a loopback address, ${blocks}`],
    [`http://[::ffff:127.0.0.1]:${port}/`, `ld.request refused http://[::ffff:7f00:1]:${port}/: ::ffff:7f00:1 is a loopback address, ${blocks}`],
    [`http://[64:ff9b::127.0.0.1]:${port}/`, `ld.request refused http://[64:ff9b::7f00:1]:${port}/: 64:ff9b::7f00:1 is a loopback address, ${blocks}`],
    [`http://0:${port}/`, `ld.request refused http://0.0.0.0:${port}/: 0.0.0.0 is an unspecified address, ${blocks}`],
    [`http://0.0.0.0:${port}/`, `ld.request refused http://0.0.0.0:${port}/: 0.0.0.0 is an unspecified address, ${blocks}`],
    [`http://[::]:${v6?.port ?? port}/`, `ld.request refused http://[::]:${v6?.port ?? port}/: :: is an unspecified address, ${blocks}`],
  ];
  for (const [url, message] of cases) await refused(t, url, message);
  await stillServes(t);
});

t.test('a DNS name that resolves to loopback (localhost)', async (t) => {
  const first = (await lookup('localhost', { all: true, verbatim: true }))[0]!.address;
  await refused(t, `http://localhost:${port}/`, `ld.request refused http://localhost:${port}/: localhost resolves to ${first}, a loopback address, ${blocks}`);
  await refused(
    t,
    `http://LocalHost:${port}/x?y=1`,
    `ld.request refused http://localhost:${port}/x: localhost resolves to ${first}, a loopback address, ${blocks}`,
  );
  await stillServes(t);
});

t.test('private, link-local, CGNAT and metadata addresses are refused before connecting', async (t) => {
  const cases: [string, string][] = [
    ['http://169.254.169.254/latest/meta-data/iam/security-credentials/', '169.254.169.254 is a cloud metadata address'],
    ['http://[fd00:ec2::254]/latest/meta-data/', 'fd00:ec2::254 is a cloud metadata address'],
    ['http://[::ffff:169.254.169.254]/latest/', '::ffff:a9fe:a9fe is a cloud metadata address'],
    ['http://169.254.170.2/v2/credentials', '169.254.170.2 is a cloud metadata address'],
    ['http://100.100.100.200/latest/meta-data/', '100.100.100.200 is a cloud metadata address'],
    ['http://169.254.1.1/', '169.254.1.1 is a link-local address'],
    ['http://10.0.0.1/', '10.0.0.1 is a private address'],
    ['http://172.16.5.4/', '172.16.5.4 is a private address'],
    ['http://192.168.1.1/', '192.168.1.1 is a private address'],
    ['http://100.64.0.1/', '100.64.0.1 is a carrier-grade NAT address'],
    ['http://[fe80::1]/', 'fe80::1 is a link-local address'],
    ['http://[fc00::1]/', 'fc00::1 is a private address'],
    ['http://224.0.0.1/', '224.0.0.1 is a multicast address'],
    ['http://255.255.255.255/', '255.255.255.255 is a broadcast address'],
  ];
  for (const [url, why] of cases) {
    const u = new URL(url);
    const o = await refused(t, url, `ld.request refused ${u.protocol}//${u.host}${u.pathname}: ${why}, ${blocks}`);
    t.ok(o.ms < 1000, `${url}: refused at once (${Math.round(o.ms)} ms), no connection attempted`);
  }
  await stillServes(t);
});

t.test('an uncaught refusal ends the call as THROWN, and the next call is served', async (t) => {
  const o = await runCode(
    runner,
    `return await ld.request({ method: 'POST', url: 'http://169.254.169.254/latest/api/token', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '21600' } })`,
  );
  t.same(o.error, {
    kind: ErrorKind.THROWN,
    name: 'Error',
    message: `ld.request refused http://169.254.169.254/latest/api/token: 169.254.169.254 is a cloud metadata address, ${blocks}`,
  });
  await stillServes(t);
});
