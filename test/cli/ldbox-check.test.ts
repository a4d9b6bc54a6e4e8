/**
 * `ldbox check FILE.js … [--kind K]` as a user runs it: the real bin script in a child process, the real
 * TypeScript compiler and types/ld.d.ts. Problems on stdout as `file:line:col message`, a count on stderr;
 * exit 0 clean, 1 problems, 2 bad usage. Several files go into one run where the case allows, since each
 * run creates a TypeScript program.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { type CheckKind, createIntegrationChecker } from '../../src/check/integration-checker.js';
import { INSTEAD, NO_MODULES } from '../../src/guest/left-out-globals.js';
import { loadTypeScript, TypeScriptMissingError } from '../../src/check/load-typescript.js';
import { teachingMessage } from '../../runner/sandbox/error-hints.js';
import { cleanEnv, inParallel, nodeChild } from '../helpers/ldbox-cli.js';

const BIN = fileURLToPath(new URL('../../../bin/ldbox.js', import.meta.url));
const EXAMPLES = fileURLToPath(new URL('../../../examples/', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

// The detailed cases run the checker in this process: one compiler and one parse of the lib files for
// all of them (a CLI run pays for both each time). The CLI itself is run for the examples, the output
// format and exit codes, and the bad files and arguments.
const checker = createIntegrationChecker(await loadTypeScript(), fileURLToPath(new URL('../../../types/ld.d.ts', import.meta.url)));
function check(files: Record<string, string>, kind: CheckKind = 'generic'): string[] {
  const list = Object.entries(files).map(([name, text]) => ({ name, text }));
  return checker.check(list, kind).map((p) => `${p.file}:${p.line}:${p.column} ${p.message}`);
}

// The subtests are independent (files of their own names in `dir`); the CLI ones wait on child processes
// (a TypeScript program each) while the in-process ones use the checker: two run at a time.
t.jobs = 2;

const dir = await mkdtemp(join(tmpdir(), 'ldbox-check-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

/** Runs `ldbox` in `cwd` (the temporary folder, so problems name the files as written here). */
function ldbox(args: string[], env: Record<string, string> = {}, cwd = dir): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(...nodeChild([BIN, ...args]), { cwd, env: cleanEnv(env), timeout: 60_000, maxBuffer: 16 << 20 }, (_err, stdout, stderr) =>
      resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

async function file(name: string, code: string | Uint8Array): Promise<string> {
  await writeFile(join(dir, name), code);
  return name;
}

/** The problems printed on stdout, one a line (continuation lines of a message kept with it). */
const problems = (r: Run) => r.stdout.split(/\n(?! )/).filter((l) => l !== '');

t.test('every example in examples/ is clean, with the result kind it is run with', async (t) => {
  const names = (await readdir(EXAMPLES)).filter((n) => n.endsWith('.js')).sort();
  t.ok(names.length >= 3, `the examples: ${names.join(', ')}`);
  // Each example says how it is run (`npx ldbox run examples/x.js --kind K`); no --kind is generic.
  const byKind = new Map<string, string[]>();
  for (const name of names) {
    const text = await readFile(join(EXAMPLES, name), 'utf8');
    const kind = /--kind ([\w-]+)/.exec(text)?.[1] ?? 'generic';
    byKind.set(kind, [...(byKind.get(kind) ?? []), join(EXAMPLES, name)]);
  }
  t.ok(byKind.has('native-download'), 'one example is checked against a result kind');
  // One run per kind, at the same time.
  const runs = await Promise.all([...byKind].map(([kind, files]) => ldbox(['check', ...files, '--kind', kind])));
  for (const [i, [kind, files]] of [...byKind].entries()) {
    const r = runs[i]!;
    t.equal(r.stdout, '', `${kind}: no problems`);
    t.equal(r.code, 0, `${kind}: exit 0`);
    const n = files.length;
    t.equal(r.stderr, `checked ${n} ${n === 1 ? 'file' : 'files'}${kind === 'generic' ? '' : ` (--kind ${kind})`}: no problems\n`);
  }
});

t.test('clean code: top-level await and return, the sandbox globals, checked on its own each', async (t) => {
  const a = [
    "const res = await ld.request({ method: 'POST', url: data.input.base + '/x', body: { a: 1 }, params: { n: 1 } });",
    "if (res.status !== 200) throw new Error('status ' + res.status);",
    "const form = new FormData(); form.append('f', btoa('hi'), 'f.txt');",
    'await ld.wait(10);',
    "ld.log('bytes', Buffer.from([1, 2]).length, atob(btoa('x')), ld.json2csv([{ a: 1 }]));",
    'const x = 1;',
    'return { items: res.json.items, x };',
  ].join('\n');
  // Both files declare x: no redeclaration, since each file is a function body of its own.
  t.same(check({ 'top-level.js': a, 'also-x.js': 'const x = 2;\nreturn x;' }), []);
});

t.test('two files checked together do not share a scope', async (t) => {
  const found = check({
    'declares.js': 'const shared = 1;\nfunction helper() { return 2; }\nreturn shared + helper();',
    'uses.js': '// uses what declares.js declared\nreturn shared + helper();',
  });
  t.same(found, ["uses.js:2:8 Cannot find name 'shared'.", "uses.js:2:17 Cannot find name 'helper'."]);
});

t.test('a misspelt built-in and wrong argument types, at the line and column of the file', async (t) => {
  const typo = await file('typo.js', "ld.lgo('x');\nconst res = await ld.requst({ method: 'GET', url: 'https://example.com' });\nreturn res;");
  const types = await file(
    'types.js',
    [
      "await ld.wait('100');",
      "const r = await ld.request({ method: 'GOT', url: 'https://example.com' });",
      'ld.csv2parquet(42, { compression: "zip" });',
      'return r;',
    ].join('\n'),
  );
  const r = await ldbox(['check', typo, types]);
  t.equal(r.code, 1);
  const found = problems(r);
  t.same(found.slice(0, 2), [
    "typo.js:1:4 Property 'lgo' does not exist on type 'typeof ld'.",
    "typo.js:2:22 Property 'requst' does not exist on type 'typeof ld'. Did you mean 'request'?",
  ]);
  t.equal(found[2], "types.js:1:15 Argument of type 'string' is not assignable to parameter of type 'number'.");
  t.match(found[3] ?? '', /^types\.js:2:30 No overload matches this call\.\n/);
  t.match(found[3] ?? '', `Type '"GOT"' is not assignable to type 'HttpMethod'.`);
  t.equal(found[4], "types.js:3:16 Argument of type 'number' is not assignable to parameter of type 'string'.");
  t.equal(found.length, 5, 'nothing else');
  t.equal(r.stderr, '5 problems in 2 of 2 files\n');
});

t.test('the sandbox missing globals get the advice the sandbox gives at run time', async (t) => {
  const found = check({
    'node-isms.js': "console.log(1);\nsetTimeout(() => {}, 10);\nconst fs = require('fs');\nconst r = await fetch('https://example.com');\nreturn r;",
  });
  t.same(found, [
    'node-isms.js:1:1 console is not available in the sandbox: use ld.log(...)',
    'node-isms.js:2:1 setTimeout is not available in the sandbox: use await ld.wait(ms)',
    `node-isms.js:3:12 require is not available in the sandbox: ${NO_MODULES}`,
    'node-isms.js:4:17 fetch is not available in the sandbox: use ld.request({ method, url, ... })',
  ]);
  // The same words as the sandbox's own (runner/sandbox/error-hints.ts).
  const names = { ld: [], globals: [] };
  for (const [name, instead] of Object.entries(INSTEAD)) {
    t.equal(teachingMessage('ReferenceError', `'${name}' is not defined`, '', '', names), `${name} is not available in the sandbox: ${instead}`, name);
  }
  t.equal(
    teachingMessage('SyntaxError', 'unexpected token', '    at user.js:1:1', "import x from 'y';", names),
    `import statements are not available in the sandbox: ${NO_MODULES} (unexpected token)`,
  );
});

t.test('import and export are refused with the sandbox message; export {} is not needed', async (t) => {
  const code = [
    "import { x } from './lib.js';",
    'const a = 1;',
    'export const b = 2;',
    "const m = await import('./other.js');",
    'export { a };',
    'return a + b + x + m;',
  ];
  t.same(check({ 'module.js': code.join('\n') }), [
    `module.js:1:1 import statements are not available in the sandbox: ${NO_MODULES}`,
    `module.js:3:1 export statements are not available in the sandbox: ${NO_MODULES}`,
    `module.js:4:17 import('./other.js') is not available in the sandbox: ${NO_MODULES}`,
    `module.js:5:1 export statements are not available in the sandbox: ${NO_MODULES}`,
  ]);
});

t.test('--kind: every return is checked against the kind, and every missing field is listed at once', async (t) => {
  const search = await file(
    'search.js',
    [
      'const rows = data.input.rows;',
      'if (rows.length === 0) return { items: [] };',
      "return [{ url: 'https://example.com/1', title: 42 }, { documentId: 'd2', url: 'u', title: 't', mimeType: 'text/plain', createdDate: new Date(), lastSeenByUser: 0, lastModifiedByAnyone: '2024-01-01' }];",
    ].join('\n'),
  );
  const r = await ldbox(['check', search, '--kind', 'native-search']);
  t.same(problems(r), [
    'search.js:3:9 missing fields of NativeSearchItem: documentId, mimeType, lastSeenByUser, createdDate, lastModifiedByAnyone',
    "search.js:3:41 Type 'number' is not assignable to type 'string'.",
  ]);
  t.equal(r.code, 1);
  t.equal(r.stderr, '2 problems in 1 of 1 file (--kind native-search)\n');

  // Through a variable: TypeScript's list ("…, and 2 more") is replaced by the full one.
  t.same(check({ 'search-variable.js': "const item = { url: 'u' };\nreturn [item];" }, 'native-search'), [
    'search-variable.js:2:9 missing fields of NativeSearchItem: documentId, title, mimeType, lastSeenByUser, createdDate, lastModifiedByAnyone',
  ]);
  const files =
    "if (data.input.a) return { fileName: 'a.txt' };\nreturn { files: [{ fileName: 'b.txt', mimeType: 'text/plain', text: 'b' }, { mimeType: 'x', base64: 'AA==' }] };";
  t.same(check({ 'files.js': files }, 'files'), ['files.js:1:26 missing fields: mimeType and one of base64, text', 'files.js:2:76 missing field: fileName']);
  const download =
    "const res = await ld.request({ method: 'GET', url: 'https://example.com', responseType: 'binary' });\nreturn { fileName: 'f.bin', data: res.buffer };";
  t.same(check({ 'download.js': download }, 'native-download'), [
    'download.js:2:8 missing fields of NativeDownloadResult: mimeType, buffer',
    "download.js:2:29 Object literal may only specify known properties, and 'data' does not exist in type 'NativeDownloadResult'.",
  ]);
  t.same(check({ 'no-return.js': "ld.log('forgot to return');" }, 'files'), [
    'no-return.js:1:1 the code returns nothing, but --kind files expects a result of type ld.FilesResult: end it with return',
  ]);
  t.same(check({ 'some-paths.js': "if (data.input.a) return { fileName: 'a', mimeType: 'b', buffer: new ArrayBuffer(1) };" }, 'native-download'), [
    'some-paths.js:1:1 not every path of the code ends with return, but --kind native-download expects a result of type ld.NativeDownloadResult (a path without return gives null)',
  ]);
  t.same(check({ 'generic.js': "return { anything: ['at', 1] };" }), [], 'generic: any value');
});

t.test('the runner lists the same missing fields at run time', async (t) => {
  const f = await file('run-search.js', "return [{ url: 'https://example.com/1', title: 'T' }];");
  const [checked, ran] = await Promise.all([ldbox(['check', f, '--kind', 'native-search']), ldbox(['run', f, '--kind', 'native-search'])]);
  t.same(problems(checked), ['run-search.js:1:9 missing fields of NativeSearchItem: documentId, mimeType, lastSeenByUser, createdDate, lastModifiedByAnyone']);
  t.equal(ran.code, 1);
  t.match(
    ran.stderr,
    'InvalidResultError: 5 problems: result[0].documentId is required; result[0].mimeType is required; result[0].lastSeenByUser is required; ' +
      'result[0].createdDate is required; result[0].lastModifiedByAnyone is required',
  );
});

t.test('bad usage: exit 2 with one message and the usage line', async (t) => {
  const ok = await file('ok.js', 'return 1;');
  const usage = 'usage: ldbox check FILE.js [FILE.js ...] [--kind generic|files|native-search|native-download]\n';
  const cases: [string[], string][] = [
    [['check'], 'give one or more FILE.js to check'],
    [['check', 'nope.js'], 'cannot read nope.js: no such file'],
    [['check', ok, 'nope.js'], 'cannot read nope.js: no such file'],
    [['check', '.'], 'cannot read .: it is a directory'],
    [['check', ok, '--kind', 'native'], '--kind must be one of generic, files, native-search, native-download, got "native"'],
    [['check', ok, '--kind'], '--kind needs a value'],
    [['check', ok, '--watch'], 'unknown option --watch'],
  ];
  // Each stops at its arguments or files, before TypeScript is loaded: they run a few at a time.
  const results = await inParallel(cases, ([args]) => ldbox(args));
  for (const [i, [args, message]] of cases.entries()) {
    const r = results[i]!;
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stderr, `${message}\n${usage}`, args.join(' '));
    t.equal(r.stdout, '', args.join(' '));
  }
});

t.test('a huge or binary file is refused before it is checked', async (t) => {
  const hugeCode = `return ${JSON.stringify('x'.repeat(2 * 1024 * 1024))};`;
  const smallCode = `return ${JSON.stringify('x'.repeat(2000))};`;
  const huge = await file('huge.js', hugeCode);
  const small = await file('over-a-small-limit.js', smallCode);
  const binary = await file('binary.js', new Uint8Array([0x72, 0x65, 0x74, 0x00, 0x01, 0xff]));
  const latin1 = await file('latin1.js', new Uint8Array([0x72, 0x65, 0x74, 0x75, 0x72, 0x6e, 0x20, 0x27, 0xe9, 0x27]));
  const cases: [string[], Record<string, string>, string][] = [
    [['check', huge], {}, `huge.js is ${hugeCode.length} bytes, over the runner's limit of 1MiB for code (LDBOX_MAX_CODE_BYTES)`],
    [
      ['check', small],
      { LDBOX_MAX_CODE_BYTES: '1KiB' },
      `over-a-small-limit.js is ${smallCode.length} bytes, over the runner's limit of 1KiB for code (LDBOX_MAX_CODE_BYTES)`,
    ],
    [['check', binary], {}, 'binary.js is not text (a NUL byte at offset 3): integration code is JavaScript source'],
    [['check', latin1], {}, 'latin1.js is not text (not valid UTF-8): integration code is JavaScript source'],
  ];
  // Each is refused before TypeScript is loaded: they run a few at a time, the bad setting alongside.
  const [results, badLimit] = await Promise.all([
    inParallel(cases, ([args, env]) => ldbox(args, env)),
    ldbox(['check', small], { LDBOX_MAX_CODE_BYTES: 'lots' }),
  ]);
  for (const [i, [args, , message]] of cases.entries()) {
    const r = results[i]!;
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stderr, `${message}\nusage: ldbox check FILE.js [FILE.js ...] [--kind generic|files|native-search|native-download]\n`, args.join(' '));
    t.equal(r.stdout, '', args.join(' '));
  }
  t.equal(badLimit.code, 2, 'a bad LDBOX_MAX_CODE_BYTES is a configuration error');
  t.match(badLimit.stderr, /^configuration error: LDBOX_MAX_CODE_BYTES /);
});

t.test('without TypeScript installed, the message says how to get it', async (t) => {
  const err = await loadTypeScript('typescript-that-is-not-installed').then(
    () => undefined,
    (e: unknown) => e,
  );
  t.type(err, TypeScriptMissingError);
  t.equal(
    (err as Error).message,
    'ldbox check needs the TypeScript compiler, which is not installed here (it is an optional peer dependency of ldbox): install it next to ldbox with `npm install --save-dev typescript@5`',
  );
  const ts = await loadTypeScript();
  t.equal(typeof ts.createProgram, 'function', 'the installed compiler loads');
});
