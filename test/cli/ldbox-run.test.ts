/**
 * `ldbox run FILE.js` as a user runs it: the real bin script in a child process, result JSON on
 * stdout, logs on stderr, exit codes 0 (ok), 1 (the code failed), 2 (bad usage).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { BIN, cleanEnv, inParallel, nodeChild } from '../helpers/ldbox-cli.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function ldbox(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(...nodeChild([BIN, ...args]), { env: cleanEnv(env), timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

// The subtests are independent (each writes files of its own names into `dir`) and spend their time in
// `ldbox run` child processes. A run that executes code takes ~1.8 s of CPU in ~1.2 s (its worker thread
// starts alongside the main one), so two such runs at a time keep both cores busy: more only crowd them.
// Hence two subtests at a time, each running at most two code-running processes at once.
t.jobs = 2;

/** How many `ldbox run`s that execute code a subtest starts at once (see t.jobs above). */
const RUNS_AT_ONCE = 2;

const dir = await mkdtemp(join(tmpdir(), 'ldbox-cli-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
async function file(name: string, code: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, code);
  return path;
}

// The timed-out loop runs first, before any subtest starts other runs: the pool hard-stops a worker that
// has not answered 1 s after a call's time limit, and that second includes the worker preparing its
// first sandbox, which crowded cores can stretch past it ('… (it was stuck in a built-in and its worker
// was stopped)' instead of the plain time limit). Asserted in 'user-code failures' below.
const timedOutLoop = await ldbox(['run', await file('loop.js', 'while (true) {}'), '--timeout-ms', '200']);

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
  // Four processes that depend on nothing but their own file: they run two at a time.
  const timeout = timedOutLoop;
  const [thrown, syntax, memory, shape] = await inParallel(
    [
      ['run', await file('throw.js', "\n\nthrow new TypeError('nope');")],
      ['run', await file('syntax.js', 'return (')],
      ['run', await file('bomb.js', "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);"), '--memory-mb', '16'],
      ['run', await file('shape.js', "return { fileName: 'x' };"), '--kind', 'files'],
    ],
    (args) => ldbox(args),
    RUNS_AT_ONCE,
  );
  t.equal(thrown!.code, 1);
  t.equal(thrown!.stdout, '');
  t.match(thrown!.stderr, /^TypeError: nope\n {4}at .* \(user\.js:3:\d+\)\n\(thrown\)\n$/);

  t.equal(syntax!.code, 1);
  t.match(syntax!.stderr, /^SyntaxError: .*\n\(syntax\)\n$/);

  t.equal(timeout.code, 1);
  t.equal(timeout.stderr, 'TimeoutError: the code ran longer than its 200 ms limit\n(timeout)\n');

  t.equal(memory!.code, 1);
  t.equal(memory!.stderr, 'MemoryLimitError: the code used more than its 16 MiB memory limit\n(memory-limit)\n');

  t.equal(shape!.code, 1);
  t.equal(
    shape!.stderr,
    'InvalidResultError: 2 problems: result.mimeType must be a string, got nothing; result must have base64 or text content\n(invalid-result)\n',
  );
});

t.test('bad usage exits 2 with the usage line', async (t) => {
  const ok = await file('ok.js', 'return 1');
  const cases: [string[], string][] = [
    [['run'], 'give exactly one FILE.js (or - to read the code from stdin)'],
    [['run', ok, ok], 'give exactly one FILE.js (or - to read the code from stdin)'],
    [['run', join(dir, 'missing.js')], `cannot read FILE.js ${join(dir, 'missing.js')}: no such file`],
    [['run', dir], `cannot read FILE.js ${dir}: it is a directory`],
    [['run', ok, '--input', '{'], "--input: bad JSON at line 1, column 2 (Expected property name or '}')"],
    [['run', ok, '--input', '[1]'], '--input must be a JSON object, got an array'],
    [['run', ok, '--auth', 'null'], '--auth must be a JSON object, got null'],
    [['run', ok, '--watch', '-'], 'give exactly one FILE.js (or - to read the code from stdin)'],
    [['run', '-', '--watch'], '--watch needs a FILE.js to watch, not - (stdin)'],
    [['run', ok, '--out='], '--out needs a directory'],
    [['run', ok, '--kind', 'pdf'], '--kind must be one of generic, files, native-search, native-download, got "pdf"'],
    [['run', ok, '--timeout-ms=-5'], '--timeout-ms must be a whole number from 1 to 120000, got "-5"'],
    [['run', ok, '--timeout-ms', '-5'], '--timeout-ms needs a value (one starting with - is written --timeout-ms=-…)'],
    [['run', ok, '--memory-mb', '1'], '--memory-mb must be a whole number from 4 to 512, got "1"'],
    [['run', ok, '--nope', '1'], 'unknown option --nope'],
    [['run', ok, '--input'], '--input needs a value'],
  ];
  // Every case is its own process that stops at its arguments or settings: they run a few at a time.
  const [results, unknown, badEnv] = await Promise.all([
    inParallel(cases, ([args]) => ldbox(args)),
    ldbox(['frobnicate']),
    ldbox(['run', ok], { LDBOX_POOL_SIZE: 'many' }),
  ]);
  for (const [i, [args, message]] of cases.entries()) {
    const r = results[i]!;
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stderr.split('\n')[0], message, args.join(' '));
    t.match(r.stderr, /usage: ldbox run FILE\.js/);
  }
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /^unknown command "frobnicate"/);
  t.equal(badEnv.code, 2);
  t.equal(badEnv.stderr, 'configuration error: LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "many"\n');
});

t.test('the result goes to stdout as JSON, nothing else', async (t) => {
  const r = await ldbox(['run', await file('value.js', "ld.log('to stderr'); return [1, 'two', { three: null }];")]);
  t.equal(r.code, 0);
  t.equal(r.stdout, '[\n  1,\n  "two",\n  {\n    "three": null\n  }\n]\n');
  t.equal(r.stderr, 'to stderr\n');
});

/** Runs `ldbox` with `stdin` written to its standard input. */
function ldboxWithStdin(args: string[], stdin: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(...nodeChild([BIN, ...args]), { env: cleanEnv({}), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
    child.stdin!.end(stdin);
  });
}

t.test('--input @FILE and --auth @FILE read JSON from files', async (t) => {
  const f = await file('at.js', "ld.log('key', data.auth.key); return { n: data.input.n, nested: data.input.nested };");
  const input = await file('input.json', '{\n  "n": 7,\n  "nested": { "a": [1, 2] }\n}\n');
  const auth = await file('auth.json', '{ "key": "key-1234567890" }');
  const r = await ldbox(['run', f, '--input', `@${input}`, '--auth', `@${auth}`]);
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), { n: 7, nested: { a: [1, 2] } });
  t.equal(r.stderr, 'key [REDACTED]\n', 'a secret read from a file is redacted too');
});

t.test('a bad @FILE exits 2 naming the file, the line and the column', async (t) => {
  const ok = await file('ok2.js', 'return 1');
  const broken = await file('broken.json', '{\n  "a": 1\n  "b": 2\n}\n');
  const token = await file('token.json', '{\n  "a": nope\n}');
  const truncated = await file('truncated.json', '{"a": [1, 2');
  const list = await file('list.json', '[1, 2]');
  const cases: [string[], string][] = [
    [['--input', `@${broken}`], `--input @${broken}: bad JSON at line 3, column 3 (Expected ',' or '}' after property value)`],
    [['--auth', `@${token}`], `--auth @${token}: bad JSON at line 2, column 9 (Unexpected token 'o')`],
    [['--input', `@${truncated}`], `--input @${truncated}: bad JSON at line 1, column 12 (Expected ',' or ']' after array element)`],
    [['--input', `@${list}`], `--input @${list} must be a JSON object, got an array`],
    [['--auth', `@${join(dir, 'nowhere.json')}`], `cannot read --auth file ${join(dir, 'nowhere.json')}: no such file`],
  ];
  const results = await inParallel(cases, ([args]) => ldbox(['run', ok, ...args]));
  for (const [i, [args, message]] of cases.entries()) {
    const r = results[i]!;
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stderr.split('\n')[0], message, args.join(' '));
  }
});

t.test('- reads the code from stdin', async (t) => {
  const [r, failed] = await Promise.all([
    ldboxWithStdin(['run', '-', '--input', '{"who":"stdin"}'], "ld.log('from a pipe');\nreturn 'hello ' + data.input.who;\n"),
    ldboxWithStdin(['run', '-'], 'console.log(1)'),
  ]);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, '"hello stdin"\n');
  t.equal(r.stderr, 'from a pipe\n');
  t.equal(failed.code, 1);
  t.match(failed.stderr, /^ReferenceError: console is not available in the sandbox: use ld\.log\(\.\.\.\)\n/);
});

t.test('--out DIR writes files and downloads under safe names, never over an existing file', async (t) => {
  const out = join(dir, 'out', 'nested');
  const files = await file(
    'many.js',
    `return { files: [
      { fileName: 'report.csv', mimeType: 'text/csv', text: 'a,b\\n1,2\\n' },
      { fileName: '../../escape.txt', mimeType: 'text/plain', text: 'inside' },
      { fileName: 'report.csv', mimeType: 'text/csv', text: 'second' },
      { fileName: '..', mimeType: 'application/octet-stream', base64: 'AQID' },
    ] };`,
  );
  const r = await ldbox(['run', files, '--kind', 'files', '--out', out]);
  t.equal(r.code, 0, r.stderr);
  const printed = JSON.parse(r.stdout) as { files: { fileName: string; path: string; bytes: number }[] };
  t.same(
    printed.files.map((f) => [f.fileName, f.path, f.bytes]),
    [
      ['report.csv', join(out, 'report.csv'), 8],
      ['../../escape.txt', join(out, 'escape.txt'), 6],
      ['report.csv', join(out, 'report (1).csv'), 6],
      ['..', join(out, 'download'), 3],
    ],
  );
  t.equal(await readFile(join(out, 'report.csv'), 'utf8'), 'a,b\n1,2\n');
  t.equal(await readFile(join(out, 'escape.txt'), 'utf8'), 'inside');
  t.equal(await readFile(join(out, 'report (1).csv'), 'utf8'), 'second');
  t.same([...(await readFile(join(out, 'download')))], [1, 2, 3]);
  t.same((await readdir(join(dir, 'out'))).sort(), ['nested'], 'nothing was written outside DIR');
  t.match(r.stderr, `wrote ${join(out, 'report.csv')} (8 bytes)\n`);

  // The runs after the first write names of their own (or nothing) into DIR: they run at the same time.
  const dl = await file('dl2.js', "return { fileName: 'sub/dir/photo.bin', mimeType: 'application/octet-stream', buffer: new Uint8Array([9, 8, 7]).buffer };");
  const gen = await file('gen.js', 'return 1');
  const blocked = await file('blocked', 'a file where the directory should be');
  const [again, d, generic, notDir] = await inParallel(
    [
      ['run', files, '--kind', 'files', '--out', out],
      ['run', dl, '--kind', 'native-download', '--out', out],
      ['run', gen, '--out', out],
      ['run', files, '--kind', 'files', '--out', blocked],
    ],
    (args) => ldbox(args),
    RUNS_AT_ONCE,
  );
  t.equal(again!.code, 0);
  t.equal(await readFile(join(out, 'report.csv'), 'utf8'), 'a,b\n1,2\n', 'a second run leaves the first files as they were');
  t.same((JSON.parse(again!.stdout) as { files: { path: string }[] }).files[0]!.path, join(out, 'report (2).csv'));

  t.equal(d!.code, 0, d!.stderr);
  t.same(JSON.parse(d!.stdout), { fileName: 'sub/dir/photo.bin', mimeType: 'application/octet-stream', path: join(out, 'photo.bin'), bytes: 3 });
  t.same([...(await readFile(join(out, 'photo.bin')))], [9, 8, 7]);

  t.equal(generic!.code, 0);
  t.equal(generic!.stdout, '1\n');
  t.equal(generic!.stderr, '[warn] --out: a generic result has no files to write\n');

  t.equal(notDir!.code, 2);
  t.match(notDir!.stderr, `cannot write into --out ${blocked}: `);
});

t.test('--watch runs again when the file (or an @FILE) changes', async (t) => {
  const code = await file('watched.js', "return 'first ' + data.input.v");
  const input = await file('watched.json', '{"v": 1}');
  const child = spawn(...nodeChild([BIN, 'run', code, '--watch', '--input', `@${input}`]), { env: cleanEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c));
  child.stderr.on('data', (c: Buffer) => (stderr += c));
  // Polls the output for the condition; the 60 s cap only bounds a failing run (other subtests run alongside).
  const until = async (what: () => boolean, label: string) => {
    const deadline = Date.now() + 60_000;
    while (!what() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    t.ok(what(), label);
  };
  await until(() => stdout.includes('"first 1"') && stderr.includes('watching'), 'the first run');
  await writeFile(code, "return 'second ' + data.input.v");
  await until(() => stdout.includes('"second 1"'), 'a change of the code runs it again');
  await writeFile(input, '{"v": 2}');
  await until(() => stdout.includes('"second 2"'), 'a change of an @FILE runs it again');
  await writeFile(input, '{"v": ');
  await until(() => stderr.includes(`--input @${input}: bad JSON`), 'a bad @FILE is reported, and watching goes on');
  await writeFile(code, 'throw new Error("third")');
  await writeFile(input, '{"v": 3}');
  await until(() => stderr.includes('Error: third'), 'a failing run is reported, and watching goes on');
  t.equal(stdout, '"first 1"\n"second 1"\n"second 2"\n', 'one result per successful run, nothing twice');
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  child.kill('SIGINT');
  t.equal(await exited, 1, 'Ctrl-C stops it with the exit code of the last run');
});
