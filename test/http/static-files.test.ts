/**
 * The static-file route (src/http/static-files.ts) on a real node:http server: types, ETag/304, HEAD, the
 * redirect of the bare prefix, 405, and that nothing but the folder's own files is reachable: `..`,
 * percent-encoded dots and slashes, backslashes, subfolders, files of unknown types and other prefixes.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createStaticFiles, loadStaticFiles } from '../../src/http/static-files.js';
import { rawRequest } from '../helpers/raw-http.js';

/** A folder with servable files, a file of an unknown type, a subfolder, and a secret next to the folder. */
function fixtureDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'ldbox-static-'));
  writeFileSync(join(root, 'secret.txt'), 'outside the folder');
  writeFileSync(join(root, 'secret.js'), 'outside the folder');
  const dir = join(root, 'site');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>x</title>');
  writeFileSync(join(dir, 'app.js'), 'export const a = 1;\n');
  writeFileSync(join(dir, 'style.css'), 'body { color: red; }\n');
  writeFileSync(join(dir, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  writeFileSync(join(dir, 'notes.txt'), 'not a served type');
  writeFileSync(join(dir, 'sub', 'inner.js'), 'subfolders are not served');
  return dir;
}

t.test('the folder is read once: servable types only, no subfolders; a missing folder serves nothing', async (t) => {
  const dir = fixtureDir();
  t.same([...loadStaticFiles(dir).keys()].sort(), ['app.js', 'index.html', 'logo.png', 'style.css']);
  t.same(loadStaticFiles(join(dir, 'missing')).size, 0);
  t.same(createStaticFiles({ prefix: '/site', dir: join(dir, 'missing') }).names, []);
});

t.test('over HTTP', async (t) => {
  const dir = fixtureDir();
  const files = createStaticFiles({ prefix: '/site', dir, headers: { 'content-security-policy': "default-src 'self'" } });
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    if (!files.route(req, res, q < 0 ? url : url.slice(0, q))) {
      res.writeHead(418, { 'content-type': 'text/plain' });
      res.end('not the static route');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  const get = (target: string, opts?: Parameters<typeof rawRequest>[2]) => rawRequest(port, target, opts);

  t.test('each file with its type, the caller headers, nosniff, an ETag and no-cache', async (t) => {
    const cases: [string, string, string][] = [
      ['/site/', 'text/html; charset=utf-8', '<!doctype html><title>x</title>'],
      ['/site/index.html', 'text/html; charset=utf-8', '<!doctype html><title>x</title>'],
      ['/site/app.js', 'text/javascript; charset=utf-8', 'export const a = 1;\n'],
      ['/site/app.js?v=2', 'text/javascript; charset=utf-8', 'export const a = 1;\n'],
      ['/site/style.css', 'text/css; charset=utf-8', 'body { color: red; }\n'],
    ];
    for (const [target, type, body] of cases) {
      const r = await get(target);
      t.equal(r.status, 200, target);
      t.equal(r.headers['content-type'], type, target);
      t.equal(r.headers['x-content-type-options'], 'nosniff', target);
      t.equal(r.headers['content-security-policy'], "default-src 'self'", target);
      t.equal(r.headers['cache-control'], 'no-cache', target);
      t.equal(r.headers['content-length'], String(Buffer.byteLength(body)), target);
      t.match(r.headers.etag, /^"[\w-]{27}"$/, target);
      t.equal(r.body.toString(), body, target);
    }
    const png = await get('/site/logo.png');
    t.same([png.status, png.headers['content-type'], [...png.body]], [200, 'image/png', [0x89, 0x50, 0x4e, 0x47]]);
  });

  t.test('If-None-Match with the ETag is 304 without a body; another ETag gets the file', async (t) => {
    const first = await get('/site/app.js');
    const again = await get('/site/app.js', { headers: { 'if-none-match': first.headers.etag! } });
    t.same([again.status, again.body.length, again.headers.etag, again.headers['x-content-type-options']], [304, 0, first.headers.etag, 'nosniff']);
    const other = await get('/site/app.js', { headers: { 'if-none-match': '"something-else"' } });
    t.equal(other.status, 200);
    t.not((await get('/site/style.css')).headers.etag, first.headers.etag, 'each file has its own ETag');
  });

  t.test('HEAD answers the headers without the body', async (t) => {
    const r = await get('/site/app.js', { method: 'HEAD' });
    t.same([r.status, r.headers['content-type'], r.headers['content-length'], r.body.length], [200, 'text/javascript; charset=utf-8', '20', 0]);
  });

  t.test('the bare prefix redirects to the folder', async (t) => {
    for (const target of ['/site', '/site?x=1']) {
      const r = await get(target);
      t.same([r.status, r.headers.location, r.headers['x-content-type-options']], [308, '/site/', 'nosniff'], target);
    }
  });

  t.test('other methods are 405 with Allow, and a body sent along is read and dropped', async (t) => {
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
      const r = await get('/site/app.js', { method, body: method === 'POST' ? 'x'.repeat(10_000) : undefined });
      t.same([r.status, r.headers.allow, r.body.toString()], [405, 'GET, HEAD', 'method not allowed: GET or HEAD\n'], method);
    }
  });

  t.test('nothing outside the folder, under it or of another type: 404', async (t) => {
    const targets = [
      '/site/../secret.txt',
      '/site/../secret.js',
      '/site/%2e%2e/secret.js',
      '/site/%2E%2E/secret.js',
      '/site/..%2fsecret.js',
      '/site/..%2Fsecret.js',
      '/site/%2e%2e%2fsecret.js',
      '/site/..\\secret.js',
      '/site/..%5csecret.js',
      '/site/.%2e/secret.js',
      '/site/./app.js',
      '/site//app.js',
      '/site/sub/inner.js',
      '/site/sub%2finner.js',
      '/site/notes.txt',
      '/site/missing.js',
      '/site/app.js/',
      '/site/APP.JS',
      '/site/%61pp.js',
      '/site/app.js%00',
      '/site/__proto__',
      '/site/constructor',
    ];
    for (const target of targets) {
      const r = await get(target);
      t.same([r.status, r.headers['content-type'], r.body.toString()], [404, 'text/plain; charset=utf-8', 'not found\n'], target);
      t.equal(r.headers['x-content-type-options'], 'nosniff', target);
    }
  });

  t.test('paths that only start like the prefix are not the route', async (t) => {
    for (const target of ['/sitemap.xml', '/site.js', '/sites/app.js', '/', '/other/site/app.js']) t.equal((await get(target)).status, 418, target);
  });
});
