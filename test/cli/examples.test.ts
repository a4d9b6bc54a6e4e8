/**
 * The README's integration examples, run with `ldbox run` against a local API (loopback only, opened
 * to the egress guard with LDBOX_EGRESS_ALLOW): Bearer auth, Basic auth and a file download.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { BIN, cleanEnv, nodeChild } from '../helpers/ldbox-cli.js';

const example = (name: string) => fileURLToPath(new URL(`../../../examples/${name}`, import.meta.url));

// Two subtests at a time, each against a local API of its own (what one API saw is that subtest's call
// only). Each is one `ldbox run`, ~1.8 s of CPU in ~1.2 s (a worker thread starts alongside the main one):
// two at a time keep both cores busy, more would only crowd them.
t.jobs = 2;

interface Api {
  base: string;
  /** The requests it was sent, in order. */
  seen: { url: string; authorization: string | undefined }[];
}

/** A local API on a loopback port of its own for test `t` (closed at its end). */
async function startApi(t: Test): Promise<Api> {
  const seen: Api['seen'] = [];
  const api = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
    if (req.url?.startsWith('/items') && req.headers.authorization === 'Bearer tok-abcdef') {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          items: [
            { id: 1, title: 'one' },
            { id: 2, title: 'two' },
          ],
        }),
      );
    } else if (req.url === '/files/42' && req.headers.authorization === `Basic ${Buffer.from('me:pa55word').toString('base64')}`) {
      res.setHeader('content-type', 'application/pdf');
      res.end(Buffer.from([0x25, 0x50, 0x44, 0x46]));
    } else {
      res.statusCode = 401;
      res.end('no');
    }
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => api.close(() => resolve())));
  return { base: `http://127.0.0.1:${(api.address() as AddressInfo).port}`, seen };
}

function ldbox(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(...nodeChild([BIN, ...args]), { env: cleanEnv({ LDBOX_EGRESS_ALLOW: '127.0.0.1' }) }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

t.test('Bearer auth: the items, and the token redacted in the logs', async (t) => {
  const { base, seen } = await startApi(t);
  const r = await ldbox([
    'run',
    example('list-items-bearer.js'),
    '--input',
    JSON.stringify({ baseUrl: base, limit: 2 }),
    '--auth',
    '{"access_token":"tok-abcdef"}',
  ]);
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), [
    { id: '1', title: 'one' },
    { id: '2', title: 'two' },
  ]);
  t.equal(r.stderr, 'listed 2 items with token [REDACTED]\n');
  t.same(seen.at(-1), { url: '/items?limit=2', authorization: 'Bearer tok-abcdef' });
});

t.test('a wrong token is an API answer the code handles', async (t) => {
  const { base } = await startApi(t);
  const r = await ldbox(['run', example('list-items-bearer.js'), '--input', JSON.stringify({ baseUrl: base }), '--auth', '{"access_token":"wrong-token"}']);
  t.equal(r.code, 0);
  t.same(JSON.parse(r.stdout), { error: 'listing failed with status 401' });
  t.equal(r.stderr, 'the API answered 401 no\n');
});

t.test('Basic auth download as a native download', async (t) => {
  const { base } = await startApi(t);
  const input = { itemId: '42', parent: JSON.stringify({ url: base }) };
  const r = await ldbox([
    'run',
    example('download-basic-auth.js'),
    '--kind',
    'native-download',
    '--input',
    JSON.stringify(input),
    '--auth',
    '{"username":"me","password":"pa55word"}',
  ]);
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), { fileName: '42.bin', mimeType: 'application/pdf', base64: Buffer.from('%PDF').toString('base64') });
});

t.test('without the operator opening loopback, the egress guard refuses the same call', async (t) => {
  const { base } = await startApi(t);
  const r = await new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      ...nodeChild([BIN, 'run', example('list-items-bearer.js'), '--input', JSON.stringify({ baseUrl: base }), '--auth', '{"access_token":"tok-abcdef"}']),
      { env: cleanEnv({ LDBOX_EGRESS_ALLOW: '' }) },
      (err, _stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr }),
    );
  });
  t.equal(r.code, 1);
  t.match(r.stderr, /^Error: ld\.request refused http:\/\/127\.0\.0\.1:\d+\/items: 127\.0\.0\.1 is a loopback address/);
});
