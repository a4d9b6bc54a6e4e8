/**
 * Redaction of data.auth values (runner/sandbox/redactor.ts, log-buffer.ts): the encoded forms a
 * secret takes on its way into a log line or an error message (JSON escapes, URL encodings, base64 of
 * Basic and Bearer credentials, base64url), and redaction before truncation, so that no cut leaves a
 * piece of a secret. In process first (exact values), then through a real runner.
 */
import t from 'tap';
import { LogLevel } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { LogBuffer } from '../../runner/sandbox/log-buffer.js';
import { collectSecrets, createRedactor, REDACTED, redactThenCap } from '../../runner/sandbox/redactor.js';
import { startTestRunner } from '../helpers/runner-harness.js';

const ESCAPED = 'pa"ss\\wo\nrd\u0001x';
const URLISH = 'p@ss w/rd+é';
const TOKEN = 'tok-123456';
/** Its base64 has `+` and `/`, so its base64url differs. */
const B64URL = 's3cr3t>>?';
const redact = createRedactor([ESCAPED, URLISH, TOKEN, B64URL, 'usr']);
const TRUNCATED_END = ' [truncated]';

t.test('JSON-escaped secrets', async (t) => {
  const cases: [string, string, string][] = [
    ['in an object', JSON.stringify({ k: ESCAPED }), '{"k":"[REDACTED]"}'],
    ['in an array', JSON.stringify([1, ESCAPED]), '[1,"[REDACTED]"]'],
    ['escaped twice (JSON inside a JSON string)', JSON.stringify({ k: JSON.stringify({ s: ESCAPED }) }), String.raw`{"k":"{\"s\":\"[REDACTED]\"}"}`],
    ['a lone surrogate, which JSON.stringify escapes', JSON.stringify({ k: 'ab\ud800cd' }), '{"k":"[REDACTED]"}'],
  ];
  const withSurrogate = createRedactor([ESCAPED, 'ab\ud800cd']);
  for (const [name, text, expected] of cases) t.equal(withSurrogate(text), expected, name);
  t.equal(redact(`raw: ${ESCAPED}`), 'raw: [REDACTED]', 'the raw form still');
});

t.test('URL-encoded secrets', async (t) => {
  const cases: [string, string, string][] = [
    ['encodeURIComponent', `/x/${encodeURIComponent(URLISH)}/y`, '/x/[REDACTED]/y'],
    ['encodeURIComponent, lower-case hex', `/x/${encodeURIComponent(URLISH).toLowerCase()}/y`, '/x/[REDACTED]/y'],
    ['form encoding (+ for a space)', new URLSearchParams({ a: '1', q: URLISH }).toString(), 'a=1&q=[REDACTED]'],
    ['a URL path written with the raw secret', new URL(`https://api.example/v1/${URLISH}/items`).href, 'https://api.example/v1/[REDACTED]/items'],
  ];
  for (const [name, text, expected] of cases) t.equal(redact(text), expected, name);
});

t.test('base64 forms', async (t) => {
  const b64url = Buffer.from(B64URL).toString('base64url');
  t.equal(b64url, 'czNjcjN0Pj4_', 'the base64url form differs from base64 (czNjcjN0Pj4/)');
  const cases: [string, string, string][] = [
    ["btoa(secret + ':') (Basic auth, empty password)", `Basic ${btoa(`${TOKEN}:`)}`, 'Basic [REDACTED]'],
    ["btoa(':' + secret) (Basic auth, empty user name)", `Basic ${btoa(`:${TOKEN}`)}`, 'Basic [REDACTED]'],
    ["btoa('Bearer ' + secret)", btoa(`Bearer ${TOKEN}`), '[REDACTED]'],
    ['base64url', `t=${b64url}.`, 't=[REDACTED].'],
    ['base64url, padded', `t=${Buffer.from(TOKEN).toString('base64url')}==.`, 't=[REDACTED].'],
    ['base64', btoa(TOKEN), '[REDACTED]'],
    ['Basic auth with a short user name', `Basic ${btoa(`usr:${TOKEN}`)}`, 'Basic [REDACTED]'],
    ['inside the base64 of a longer text: all but the groups at its ends', btoa(`x=${TOKEN}&y`), 'eD10[REDACTED]Jnk='],
  ];
  for (const [name, text, expected] of cases) t.equal(redact(text), expected, name);
  t.equal(redact('usr tok-12 dG9r'), 'usr tok-12 dG9r', 'short values and pieces are left alone');
});

t.test('Basic-auth pairs stay bounded', async (t) => {
  const many = Array.from({ length: 200 }, (_, i) => `value-${String(i).padStart(4, '0')}`);
  const started = performance.now();
  const r = createRedactor(many);
  t.ok(performance.now() - started < 2000, 'built quickly');
  t.equal(r(btoa(`${many[1]}:${many[2]}`)), REDACTED, 'a pair among the first 32 values');
  t.equal(r(`${many[150]} ${btoa(many[199]!)}`), `${REDACTED} ${REDACTED}`, 'every value and its base64, beyond the first 32');
});

t.test('redactThenCap: the budget applies to the redacted text', async (t) => {
  const r = createRedactor(collectSecrets({ token: 'S3cr3t-0123456789abcdef' }));
  const secret = 'S3cr3t-0123456789abcdef';
  t.equal(redactThenCap(r, `ab ${secret}`, 100), 'ab [REDACTED]', 'a short text is only redacted');
  // Cut first, the secret would be cut to "S3cr3t-01" and escape redaction.
  t.equal(redactThenCap(r, `${'x'.repeat(20)}${secret}${'y'.repeat(40)}`, 42), `${'x'.repeat(20)}[REDACTED]${TRUNCATED_END}`, 'a secret across the cut');
  t.equal(redactThenCap(r, `${'x'.repeat(20)}${secret}${'y'.repeat(40)}`, 35), `${'x'.repeat(20)}${TRUNCATED_END}`, 'never inside a [REDACTED]');
  t.equal(redactThenCap(r, `${secret} `.repeat(10), 60), `${'[REDACTED] '.repeat(4)}${TRUNCATED_END}`, 'several secrets');
  t.ok(redactThenCap(r, 'z'.repeat(500), 100).length <= 100, 'at most maxChars long');
  t.equal(redactThenCap(r, `ok ${secret.slice(0, 12)}`, 100, true), `ok ${TRUNCATED_END}`, 'cut short: a piece of a secret at the end is dropped');
  t.equal(
    redactThenCap(r, `ok ${secret.slice(3, 12)}`, 100, true),
    `ok ${secret.slice(3, 12)}${TRUNCATED_END}`,
    'cut short: an end that is no start of a secret stays',
  );
  t.equal(
    redactThenCap((s) => s, 'abcdef', 4),
    ' [truncated]',
    'a budget below the marker gives the marker alone',
  );
});

t.test('LogBuffer redacts before it cuts', async (t) => {
  const secret = 'S3cr3t-0123456789abcdef';
  const r = createRedactor([secret]);
  const host = new LogBuffer(r, 10, 1024);
  host.info(`${'x'.repeat(1000)}${secret}${'y'.repeat(100)}`);
  t.same(host.finish(), [{ level: 'info', message: `${'x'.repeat(1000)}[REDACTED]yy${TRUNCATED_END}` }], 'a secret across the cut is redacted whole');

  // The guest sends at most maxChars + 1 characters: 42 whole "secret " and the first 17 characters of
  // the 43rd. Redacted, the line is short, but the piece of a secret at its end must not show.
  const guest = new LogBuffer(r, 10, 1024);
  guest.info(`${secret} `.repeat(50).slice(0, 1025));
  t.same(guest.finish(), [{ level: 'info', message: `${'[REDACTED] '.repeat(42)}${TRUNCATED_END}` }], 'a line the guest cut inside a secret');

  const budget = new LogBuffer(r, 100, 1024);
  for (let i = 0; i < 40; i++) budget.info(`${secret}${secret}${secret}`);
  const entries = budget.finish();
  // 34 lines of 30 characters fit in 1024; counted before redaction (69 characters a line), 14 would.
  t.equal(entries.length, 35, 'the budget counts the redacted text');
  t.same(entries[33], { level: 'info', message: '[REDACTED][REDACTED][REDACTED]' });
  t.same(entries[34], { level: 'warn', message: 'logs truncated: 6 more entries dropped (limits: 100 entries, 1024 characters)' });
});

t.test('through a runner', async (t) => {
  const runner = await startTestRunner({ LDBOX_MAX_LOG_BYTES: '1024', LDBOX_EGRESS_ALLOW: '127.0.0.1', LDBOX_POOL_SIZE: '1' });
  t.teardown(() => runner.close());
  const auth = { json: ESCAPED, url: URLISH, token: TOKEN, long: 'S3cr3t-0123456789abcdef', short: { user: 'usr' } };
  const run = async (code: string) => {
    const res = await runner.grpc.execute({ code, auth, input: {} });
    return {
      error: res.error && { name: res.error.name, message: res.error.message },
      logs: res.logs.map((l) => [l.level === LogLevel.INFO ? 'info' : 'warn', l.message]),
    };
  };

  const logged = await run(
    [
      'ld.log({k: data.auth.json}, [data.auth.json]);',
      "ld.log('q=' + encodeURIComponent(data.auth.url), 'q=' + encodeURIComponent(data.auth.url).replace(/%20/g, '+'));",
      "ld.log('Basic ' + btoa(data.auth.token + ':'), 'Basic ' + btoa(':' + data.auth.token), btoa('Bearer ' + data.auth.token));",
      "ld.log('Basic ' + btoa(data.auth.short.user + ':' + data.auth.token));",
      'return 1;',
    ].join('\n'),
  );
  t.same(logged.logs, [
    ['info', '{"k":"[REDACTED]"} ["[REDACTED]"]'],
    ['info', 'q=[REDACTED] q=[REDACTED]'],
    ['info', 'Basic [REDACTED] Basic [REDACTED] [REDACTED]'],
    ['info', 'Basic [REDACTED]'],
  ]);

  const thrown = await run('throw {k: data.auth.json};');
  t.same(thrown.error, { name: 'Error', message: 'Uncaught {"k":"[REDACTED]"}' }, 'a thrown object with an escaped secret');

  const request = await run(
    "try { await ld.request({ method: 'GET', url: 'http://127.0.0.1:1/' + encodeURIComponent(data.auth.url) + '/x' }); return 'no error'; } catch (e) { ld.log(e.message); return 1; }",
  );
  t.same(
    request.logs,
    [['info', 'ld.request failed: connection refused (GET http://127.0.0.1:1/[REDACTED]/x)']],
    'an URL-encoded secret in an ld.request error',
  );

  // Cut first (at 1012 characters), "tok-123" would show.
  const cut = await run("ld.log('x'.repeat(1005) + data.auth.token + 'y'.repeat(100));\nreturn 1;");
  t.same(cut.logs, [['info', `${'x'.repeat(1005)}${TRUNCATED_END}`]], 'a secret across the log cut');
  const guestCut = await run("ld.log((data.auth.long + ' ').repeat(50));\nreturn 1;");
  t.same(guestCut.logs, [['info', `${'[REDACTED] '.repeat(42)}${TRUNCATED_END}`]], 'a line cut inside a secret before it reached the host');
});
