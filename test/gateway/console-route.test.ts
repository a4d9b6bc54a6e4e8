/**
 * The web console's files on a real gateway (gateway/console-route.ts): served without the admin token with
 * their types, the CSP and nosniff; every module the page imports resolves; nothing else of the repository
 * is reachable (`..`, `%2e%2e`, unknown names → 404); the control plane still wants the token. And the files
 * themselves: no inline script or style, no event-handler attributes, no third-party URL, no innerHTML.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CONSOLE_CSP, CONSOLE_DIR } from '../../gateway/console-route.js';
import { rawRequest } from '../helpers/raw-http.js';
import { gatewayFixture, rpc } from './harness.js';

const files = readdirSync(CONSOLE_DIR).sort();
const text = (name: string) => readFileSync(join(CONSOLE_DIR, name), 'utf8');

t.test('the console folder holds only plain files the CSP allows', async (t) => {
  t.ok(files.includes('index.html') && files.includes('app.js') && files.includes('console.css'), files.join(', '));
  const html = text('index.html');
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/i, 'every script has a src: none inline');
  t.notMatch(html, /<style|\sstyle=/i, 'no inline style');
  t.notMatch(html, /\son[a-z]+=/i, 'no event-handler attributes');
  for (const name of files) {
    const body = text(name);
    t.notMatch(body, /https?:\/\/(?!www\.w3\.org\/)/i, `${name}: no absolute URL (no CDN)`);
    if (name.endsWith('.js')) {
      t.notMatch(body, /\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write|\beval\(|new Function\(/, `${name}: no markup from strings, no eval`);
    }
  }
});

t.test('on the gateway', async (t) => {
  const { gateway, base } = await gatewayFixture(t);
  const get = (target: string, opts?: Parameters<typeof rawRequest>[2]) => rawRequest(gateway.port, target, opts);

  t.test('the page: HTML, with the CSP and the other headers, without a token', async (t) => {
    const r = await get('/console/');
    t.equal(r.status, 200);
    t.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    t.equal(r.headers['content-security-policy'], CONSOLE_CSP);
    t.equal(
      CONSOLE_CSP,
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    t.equal(r.headers['x-content-type-options'], 'nosniff');
    t.equal(r.headers['x-frame-options'], 'DENY');
    t.equal(r.headers['referrer-policy'], 'no-referrer');
    t.equal(r.body.toString(), text('index.html'));
    const bare = await get('/console');
    t.same([bare.status, bare.headers.location], [308, '/console/']);
  });

  t.test('every file the page loads, and every module those import, is served with its type', async (t) => {
    const seen = new Set<string>();
    const queue = [...text('index.html').matchAll(/(?:src|href)="([^"#]+)"/g)].map((m) => m[1]!);
    while (queue.length > 0) {
      const name = queue.shift()!;
      if (seen.has(name)) continue;
      seen.add(name);
      const r = await get(`/console/${name}`);
      t.equal(r.status, 200, name);
      const type = name.endsWith('.js') ? 'text/javascript; charset=utf-8' : name.endsWith('.css') ? 'text/css; charset=utf-8' : undefined;
      t.equal(r.headers['content-type'], type, name);
      t.equal(r.headers['x-content-type-options'], 'nosniff', name);
      t.equal(r.headers['content-security-policy'], CONSOLE_CSP, name);
      if (name.endsWith('.js')) for (const m of r.body.toString().matchAll(/from '\.\/([\w.-]+)'/g)) queue.push(m[1]!);
    }
    t.same(
      [...seen].sort(),
      files.filter((f) => f.endsWith('.js') || f.endsWith('.css')),
      'each .js and .css of the folder is used',
    );
  });

  t.test('nothing else of the repository: 404', async (t) => {
    for (const target of [
      '/console/../package.json',
      '/console/%2e%2e/package.json',
      '/console/%2e%2e%2fpackage.json',
      '/console/..%2f..%2fpackage.json',
      '/console/..%5cpackage.json',
      '/console/../gateway/console-route.ts',
      '/console/../../etc/passwd',
      '/console/missing.js',
      '/console/README.md',
    ]) {
      const r = await get(target);
      t.same([r.status, r.body.toString()], [404, 'not found\n'], target);
    }
  });

  t.test('other methods are 405; the control plane still needs the token', async (t) => {
    const post = await get('/console/app.js', { method: 'POST', body: '{}' });
    t.same([post.status, post.headers.allow], [405, 'GET, HEAD']);
    const refused = await rpc(base, 'ListWorkflows', {}, { token: null });
    t.equal(refused.status, 401);
    t.equal(refused.json.code, 'unauthenticated');
    t.equal((await rpc(base, 'ListWorkflows', {}, { token: 'wrong' })).status, 401);
    t.equal((await rpc(base, 'ListWorkflows', {})).status, 200);
  });

  t.test('counted under route="console" in the metrics', async (t) => {
    const metrics = await (await fetch(`${base}/metrics`)).text();
    t.match(metrics, /ldbox_gateway_requests_total\{route="console",status="200"\} \d+/);
    t.match(metrics, /ldbox_gateway_requests_total\{route="console",status="404"\} \d+/);
  });
});
