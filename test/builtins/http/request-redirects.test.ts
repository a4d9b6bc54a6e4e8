/**
 * Redirects through a real runner whose allow list opens only the host name `localhost`
 * (LDBOX_EGRESS_ALLOW=localhost): redirects are followed (at most 5) with the method rules of
 * 301/302/303/307/308, credentials (and any header holding a value of data.auth) stay with their
 * origin, and every hop passes the egress guard again: a redirect to 127.0.0.2, to 127.0.0.1 by
 * address, to the metadata address or to another scheme is refused with a clear error, and nothing
 * connects to the refused target.
 */
import t from 'tap';
import { startTestRunner } from '../../helpers/runner-harness.js';
import { startEchoServer } from './echo-server.js';
import { CATCH, runCode } from './run-code.js';

const runner = await startTestRunner({ LDBOX_EGRESS_ALLOW: 'localhost', LDBOX_POOL_SIZE: '1' });
const a = await startEchoServer('127.0.0.1');
const b = await startEchoServer('127.0.0.1');
// 127.0.0.2 is loopback too (Linux routes all of 127/8): a target the allow list does not open.
const c = await startEchoServer('127.0.0.2');
t.teardown(async () => {
  await runner.close();
  await Promise.all([a.close(), b.close(), c.close()]);
});
const baseA = `http://localhost:${a.port}`;
const baseB = `http://localhost:${b.port}`;
const redirect = (to: string, status = 302) => `${baseA}/redirect?status=${status}&to=${encodeURIComponent(to)}`;

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

async function value(t: Test, code: string) {
  const o = await runCode(runner, code, { baseA, baseB });
  t.same(o.error, undefined, 'no error');
  return o.result;
}

t.test('redirects are followed', async (t) => {
  const start = a.received.length;
  t.same(
    await value(t, `const r = await ld.request({ method: 'GET', url: '${redirect('/echo/next?x=1')}' }); return [r.status, r.json.path]`),
    [200, '/echo/next?x=1'],
    'a relative Location',
  );
  t.same(
    a.received.slice(start).map((r) => r.path),
    [`/redirect?status=302&to=${encodeURIComponent('/echo/next?x=1')}`, '/echo/next?x=1'],
  );
  t.same(
    await value(t, `const r = await ld.request({ method: 'GET', url: '${redirect(`${baseB}/echo/other`, 301)}' }); return [r.status, r.json.path]`),
    [200, '/echo/other'],
    'an absolute Location on another allowed origin',
  );
  t.same(await value(t, `const r = await ld.request({ method: 'GET', url: data.input.baseA + '/hops?n=5' }); return r.json`), { done: true }, '5 redirects');
});

t.test('more than 5 redirects is an error', async (t) => {
  const o = await runCode(runner, CATCH(`ld.request({ method: 'GET', url: data.input.baseA + '/hops?n=6' })`), { baseA });
  t.same(o.result, ['Error', `ld.request failed: more than 5 redirects (GET ${baseA}/hops)`, true]);
});

t.test('methods and bodies across redirects', async (t) => {
  const cases: [number, string, string, string][] = [
    [301, 'POST', 'GET', ''],
    [302, 'POST', 'GET', ''],
    [303, 'PUT', 'GET', ''],
    [302, 'PUT', 'PUT', '{"n":1}'],
    [307, 'POST', 'POST', '{"n":1}'],
    [308, 'PATCH', 'PATCH', '{"n":1}'],
  ];
  for (const [status, method, expectMethod, expectBody] of cases) {
    const r = await value(
      t,
      `const r = await ld.request({ method: '${method}', url: '${redirect('/echo/after', status)}', body: { n: 1 } }); return [r.json.method, r.json.body, r.json.headers['content-type'] || null]`,
    );
    t.same(r, [expectMethod, expectBody, expectBody ? 'application/json' : null], `${status} after ${method}`);
  }
});

t.test('credentials stay with their origin', async (t) => {
  const headers = `{ Authorization: 'Bearer t-1', Cookie: 'sid=1', 'X-Other': 'kept' }`;
  const same = await value(t, `const r = await ld.request({ method: 'GET', url: '${redirect('/echo/same')}', headers: ${headers} }); return r.json.headers`);
  t.match(same, { authorization: 'Bearer t-1', cookie: 'sid=1', 'x-other': 'kept' }, 'same origin: kept');
  const other = (await value(
    t,
    `const r = await ld.request({ method: 'GET', url: '${redirect(`${baseB}/echo/other`)}', headers: ${headers} }); return r.json.headers`,
  )) as Record<string, string>;
  t.same([other['authorization'], other['cookie'], other['x-other']], [undefined, undefined, 'kept'], 'another origin: Authorization and Cookie dropped');
});

t.test('headers holding a value of data.auth stay with their origin', async (t) => {
  const auth = { apiKey: 'k-9f8e7d6c5b4a', basic: { user: 'svc', password: 'hunter2-pass' } };
  const headers =
    "{ 'X-Api-Key': data.auth.apiKey, 'X-Auth': 'Basic ' + btoa(data.auth.basic.user + ':' + data.auth.basic.password), " +
    "'Proxy-Authorization': 'Basic cHJveHk6cHc=', 'X-Other': 'kept', 'X-Short': 'svc' }";
  const names = ['x-api-key', 'x-auth', 'proxy-authorization', 'x-other', 'x-short'];
  const echoed = async (to: string) => {
    const o = await runCode(
      runner,
      `const r = await ld.request({ method: 'GET', url: '${redirect(to)}', headers: ${headers} }); return r.json.headers`,
      {},
      { auth },
    );
    t.same(o.error, undefined, 'no error');
    const h = o.result as Record<string, string>;
    return names.map((n) => h[n] ?? null);
  };
  t.same(await echoed('/echo/same'), ['k-9f8e7d6c5b4a', 'Basic c3ZjOmh1bnRlcjItcGFzcw==', 'Basic cHJveHk6cHc=', 'kept', 'svc'], 'same origin: all kept');
  // A value shorter than 4 characters is not a secret on its own (as for redaction): X-Short goes on.
  t.same(await echoed(`${baseB}/echo/other`), [null, null, null, 'kept', 'svc'], 'another port: the secrets and Proxy-Authorization dropped');
  t.equal(b.received.at(-1)?.path, '/echo/other', 'served by the other origin');
});

t.test('a redirect response without Location, and 304, are results', async (t) => {
  t.same(await value(t, `const r = await ld.request({ method: 'GET', url: data.input.baseA + '/echo?status=302' }); return [r.status, r.json.method]`), [
    302,
    'GET',
  ]);
  t.same(await value(t, `const r = await ld.request({ method: 'GET', url: '${redirect('/echo', 304)}' }); return [r.status, r.text]`), [304, '']);
});

t.test('every hop passes the egress guard', async (t) => {
  const blocked = 'which the egress guard blocks';
  const cases: [string, string][] = [
    [`http://127.0.0.2:${c.port}/x?secret=1`, `ld.request refused the redirect to http://127.0.0.2:${c.port}/x: 127.0.0.2 is a loopback address, ${blocked}`],
    [`http://127.0.0.1:${a.port}/echo`, `ld.request refused the redirect to http://127.0.0.1:${a.port}/echo: 127.0.0.1 is a loopback address, ${blocked}`],
    [`http://[::1]:${a.port}/`, `ld.request refused the redirect to http://[::1]:${a.port}/: ::1 is a loopback address, ${blocked}`],
    [`http://2130706433:${a.port}/`, `ld.request refused the redirect to http://127.0.0.1:${a.port}/: 127.0.0.1 is a loopback address, ${blocked}`],
    [`http://0x7f.2:${c.port}/`, `ld.request refused the redirect to http://127.0.0.2:${c.port}/: 127.0.0.2 is a loopback address, ${blocked}`],
    [
      `http://[::ffff:127.0.0.2]:${c.port}/`,
      `ld.request refused the redirect to http://[::ffff:7f00:2]:${c.port}/: ::ffff:7f00:2 is a loopback address, ${blocked}`,
    ],
    [
      'http://169.254.169.254/latest/meta-data/',
      `ld.request refused the redirect to http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a cloud metadata address, ${blocked}`,
    ],
    [
      'http://[fd00:ec2::254]/latest/',
      `ld.request refused the redirect to http://[fd00:ec2::254]/latest/: fd00:ec2::254 is a cloud metadata address, ${blocked}`,
    ],
    ['http://10.0.0.1/', `ld.request refused the redirect to http://10.0.0.1/: 10.0.0.1 is a private address, ${blocked}`],
    ['file:///etc/passwd', 'ld.request refused the redirect to file:///etc/passwd: only http: and https: URLs are supported'],
    ['gopher://localhost:70/x', 'ld.request refused the redirect to gopher://localhost:70/x: only http: and https: URLs are supported'],
  ];
  const aConnections = a.connections();
  for (const [to, message] of cases) {
    for (const status of [302, 307]) {
      const o = await runCode(runner, CATCH(`ld.request({ method: 'GET', url: '${redirect(to, status)}' })`));
      t.same(o.result, ['Error', message, true], `${status} to ${to}`);
      t.ok(o.ms < 1500, `refused at once (${Math.round(o.ms)} ms)`);
    }
  }
  t.equal(c.connections(), 0, 'nothing connected to 127.0.0.2');
  t.equal(a.received.filter((r) => r.path === '/echo' && r.headers.host === `127.0.0.1:${a.port}`).length, 0, 'nothing reached 127.0.0.1 by address');
  t.ok(a.connections() >= aConnections, 'the allowed first hops did connect');
  t.same(await value(t, `const r = await ld.request({ method: 'GET', url: data.input.baseA + '/echo' }); return r.status`), 200, 'the sandbox still serves');
});

t.test('the first request is guarded the same way', async (t) => {
  const o = await runCode(runner, CATCH(`ld.request({ method: 'GET', url: 'http://127.0.0.2:${c.port}/' })`));
  t.same(o.result, ['Error', `ld.request refused http://127.0.0.2:${c.port}/: 127.0.0.2 is a loopback address, which the egress guard blocks`, true]);
  t.equal(c.connections(), 0, 'nothing connected to 127.0.0.2');
});
