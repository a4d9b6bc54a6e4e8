/**
 * `ldbox run FILE.js` as a user runs it: the real bin script in a child process, result JSON on
 * stdout, logs on stderr, exit codes 0 (ok), 1 (the code failed), 2 (bad usage).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const BIN = fileURLToPath(new URL('../../../bin/ldbox.js', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function ldbox(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const dir = await mkdtemp(join(tmpdir(), 'ldbox-cli-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
async function file(name: string, code: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, code);
  return path;
}

t.test('the example from the README', async (t) => {
  const example = fileURLToPath(new URL('../../../examples/hello.js', import.meta.url));
  const r = await ldbox(['run', example, '--input', '{"name":"x"}']);
  t.equal(r.code, 0);
  t.same(JSON.parse(r.stdout), { greeting: 'Hello, x!', at: '1970-01-01T00:00:00.000Z' });
  t.equal(r.stderr, 'greeting x\n');
});

t.test('input, auth (redacted in logs) and a result kind', async (t) => {
  const f = await file(
    'files.js',
    "ld.log('token', data.auth.token); return { files: { fileName: data.input.n + '.txt', mimeType: 'text/plain', text: 'hi' } };",
  );
  const r = await ldbox(['run', f, '--input', '{"n":"a"}', '--auth', '{"token":"tok-123456"}', '--kind', 'files']);
  t.equal(r.code, 0);
  t.same(JSON.parse(r.stdout), { files: { fileName: 'a.txt', mimeType: 'text/plain', text: 'hi' } });
  t.equal(r.stderr, 'token [REDACTED]\n');
});

t.test('a native download prints its bytes as base64', async (t) => {
  const f = await file('dl.js', "return { fileName: 'a.bin', mimeType: 'application/octet-stream', buffer: new Uint8Array([1, 2, 3]).buffer };");
  const r = await ldbox(['run', f, '--kind', 'native-download']);
  t.equal(r.code, 0);
  t.same(JSON.parse(r.stdout), { fileName: 'a.bin', mimeType: 'application/octet-stream', base64: 'AQID' });
});

t.test('user-code failures exit 1 with the error on stderr', async (t) => {
  const thrown = await ldbox(['run', await file('throw.js', "\n\nthrow new TypeError('nope');")]);
  t.equal(thrown.code, 1);
  t.equal(thrown.stdout, '');
  t.match(thrown.stderr, /^TypeError: nope\n {4}at .* \(user\.js:3:\d+\)\n\(thrown\)\n$/);

  const syntax = await ldbox(['run', await file('syntax.js', 'return (')]);
  t.equal(syntax.code, 1);
  t.match(syntax.stderr, /^SyntaxError: .*\n\(syntax\)\n$/);

  const timeout = await ldbox(['run', await file('loop.js', 'while (true) {}'), '--timeout-ms', '200']);
  t.equal(timeout.code, 1);
  t.equal(timeout.stderr, 'TimeoutError: the code ran longer than its 200 ms limit\n(timeout)\n');

  const memory = await ldbox(['run', await file('bomb.js', "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);"), '--memory-mb', '16']);
  t.equal(memory.code, 1);
  t.equal(memory.stderr, 'MemoryLimitError: the code used more than its 16 MiB memory limit\n(memory-limit)\n');

  const shape = await ldbox(['run', await file('shape.js', "return { fileName: 'x' };"), '--kind', 'files']);
  t.equal(shape.code, 1);
  t.equal(shape.stderr, 'InvalidResultError: result.mimeType must be a string, got nothing\n(invalid-result)\n');
});

t.test('bad usage exits 2 with the usage line', async (t) => {
  const ok = await file('ok.js', 'return 1');
  const cases: [string[], string][] = [
    [['run'], 'give exactly one FILE.js'],
    [['run', ok, ok], 'give exactly one FILE.js'],
    [['run', join(dir, 'missing.js')], `cannot read ${join(dir, 'missing.js')}`],
    [['run', ok, '--input', '{'], '--input must be JSON, got {'],
    [['run', ok, '--input', '[1]'], '--input must be a JSON object'],
    [['run', ok, '--auth', 'null'], '--auth must be a JSON object'],
    [['run', ok, '--kind', 'pdf'], '--kind must be one of generic, files, native-search, native-download, got "pdf"'],
    [['run', ok, '--timeout-ms=-5'], '--timeout-ms must be a whole number from 1 to 120000, got "-5"'],
    [['run', ok, '--timeout-ms', '-5'], '--timeout-ms needs a value (one starting with - is written --timeout-ms=-…)'],
    [['run', ok, '--memory-mb', '1'], '--memory-mb must be a whole number from 4 to 512, got "1"'],
    [['run', ok, '--nope', '1'], 'unknown option --nope'],
    [['run', ok, '--input'], '--input needs a value'],
  ];
  for (const [args, message] of cases) {
    const r = await ldbox(args);
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stderr.split('\n')[0], message, args.join(' '));
    t.match(r.stderr, /usage: ldbox run FILE\.js/);
  }
  const unknown = await ldbox(['frobnicate']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /^unknown command "frobnicate"/);
  const badEnv = await ldbox(['run', ok], { LDBOX_POOL_SIZE: 'many' });
  t.equal(badEnv.code, 2);
  t.equal(badEnv.stderr, 'configuration error: LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "many"\n');
});

t.test('the result goes to stdout as JSON, nothing else', async (t) => {
  const r = await ldbox(['run', await file('value.js', "ld.log('to stderr'); return [1, 'two', { three: null }];")]);
  t.equal(r.code, 0);
  t.equal(r.stdout, '[\n  1,\n  "two",\n  {\n    "three": null\n  }\n]\n');
  t.equal(r.stderr, 'to stderr\n');
});
