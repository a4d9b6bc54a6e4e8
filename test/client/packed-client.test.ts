/**
 * `ldbox/client` as a backend team uses it: the package is packed (`npm pack`), installed into a
 * separate temporary project, type-checked there with tsc against its declarations, and run against a
 * real runner (`bin/ldbox.js runner` with a token, on a free loopback port) and a stand-in control plane.
 *
 * Installing needs the registry for the package's dependencies (or npm's cache): a failed `npm install`
 * fails the test, with npm's output. On a machine with neither, `LDBOX_TEST_CLIENT_OFFLINE=1` unpacks
 * the tarball into the project's node_modules instead and resolves its dependencies from this
 * repository's node_modules (a symlink): the packed files are still what is tested, the install is not.
 */
import { execFile } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { withoutTapLoader } from '../helpers/ldbox-cli.js';
import { startRole } from '../helpers/role-process.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TOKEN = 'client-test-token-0123456789';

/**
 * The environment of the child processes, without the test runner's settings (TAP_*); its loader is left
 * out of NODE_OPTIONS by withoutTapLoader, which `run` starts each command through.
 */
function childEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('TAP')));
}

function run(cmd: string, args: string[], cwd: string, timeoutMs = 180_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(...withoutTapLoader(cmd, args), { cwd, env: childEnv(), timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

const dir = await mkdtemp(join(tmpdir(), 'ldbox-client-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const project = join(dir, 'consumer');

// The runner of the last subtest starts now, while the package is packed and installed (it needs neither);
// its start timeout allows for sharing the machine with npm meanwhile.
const runnerStarted = startRole('runner', { LDBOX_RUNNER_TOKEN: TOKEN, LDBOX_POOL_SIZE: '1' }, 120_000);
// A failed start is reported by the subtest that awaits it, not as an unhandled rejection here.
runnerStarted.catch(() => {});
t.teardown(async () => (await runnerStarted.catch(() => undefined))?.kill());

t.test('the package packs, and installs into another project', async (t) => {
  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }));
  // --ignore-scripts: the tests run after `npm run build`, so dist/ (declarations included) is current.
  const packed = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], ROOT);
  t.equal(packed.code, 0, 'npm pack');
  if (packed.code !== 0) t.bailout(`npm pack failed: ${packed.stderr.slice(-2000)}`);
  const tarball = join(dir, packed.stdout.trim().split('\n').pop()!);
  if (process.env.LDBOX_TEST_CLIENT_OFFLINE !== '1') {
    const installed = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], project);
    if (installed.code !== 0) {
      const output = `${installed.stdout}${installed.stderr}`.trim().slice(-4000);
      t.fail(
        `npm install of the packed tarball failed (exit ${installed.code}; on a machine without the registry, set LDBOX_TEST_CLIENT_OFFLINE=1):\n${output}`,
      );
      return;
    }
    t.comment('installed the tarball with npm install (dependencies from the registry or the npm cache)');
  } else {
    t.comment('LDBOX_TEST_CLIENT_OFFLINE=1: unpacking the tarball, dependencies from this repository (npm install not tested)');
    const pkg = join(project, 'node_modules', 'ldbox');
    await mkdir(pkg, { recursive: true });
    const untar = await run('tar', ['-xzf', tarball, '-C', pkg, '--strip-components=1'], project);
    t.equal(untar.code, 0, untar.stderr);
    await symlink(join(ROOT, 'node_modules'), join(pkg, 'node_modules'), 'dir');
  }
  t.ok((await readdir(join(project, 'node_modules', 'ldbox', 'dist', 'src', 'client'))).includes('ldbox-client.d.ts'), 'the declarations are packed');
  t.notOk((await readdir(join(project, 'node_modules', 'ldbox', 'dist'))).includes('test'), 'the tests are not');
});

/** What the consumer does: every case's outcome, printed as one JSON document. */
const CONSUMER = `
import { createRunnerClient, createControlPlaneClient, ConnectError, Code } from 'ldbox/client';
import { RunnerService } from 'ldbox/gen/ldbox/runner/v1/runner_pb';

const [runnerUrl, token, planeUrl] = process.argv.slice(2);
const out = {};
const runner = createRunnerClient({ baseUrl: runnerUrl, token });

const withProto = JSON.parse('{"name": "Ada", "__proto__": {"polluted": true}}');
const r = await runner.execute({
  code: "ld.log('token', data.auth.token); return { hello: data.input.name, input: data.input, made: JSON.parse('{\\"__proto__\\": {\\"x\\": 1}}'), big: [1.5, 'two', null, true] }",
  input: withProto,
  auth: { token },
  limits: { timeoutMs: 5000, memoryBytes: 32 * 1024 * 1024 },
});
out.generic = {
  result: r.result,
  madeKeys: Object.keys(r.result.made),
  madeProto: Object.getPrototypeOf(r.result.made) === Object.prototype,
  inputKeys: Object.keys(r.result.input),
  logs: r.logs,
  error: r.error,
  statsTypes: [typeof r.stats.wallTimeMs, typeof r.stats.memoryUsedBytes],
  requestId: typeof r.requestId,
};
const files = await runner.execute({
  code: "return { files: [{ fileName: 'a.txt', mimeType: 'text/plain', text: 'hi' }, { fileName: 'b.bin', mimeType: 'application/octet-stream', base64: 'AQID' }] }",
  resultKind: 'files',
});
out.files = files.files.map((f) => ({ ...f, content: [...f.content] }));
const dl = await runner.execute({
  code: "return { fileName: 'x.bin', mimeType: 'application/octet-stream', buffer: new Uint8Array([7, 8]).buffer }",
  resultKind: 'native-download',
});
out.download = { result: dl.result, download: { ...dl.download, content: [...dl.download.content] } };
const failed = await runner.execute({ code: 'ld.requst({})', requestId: 'my-id-1' });
out.failed = { result: failed.result, error: failed.error, requestId: failed.requestId };
const early = await runner.execute({ code: 'ld.wait(1000); return' });
out.early = { result: early.result, logs: early.logs };
const viaConnect = createRunnerClient({ baseUrl: runnerUrl, token, protocol: 'connect' });
out.connect = (await viaConnect.execute({ code: 'return data.input', input: withProto })).result;
out.connectKeys = Object.keys(out.connect);
out.pool = (await runner.getPoolStatus()).workers;
try {
  await createRunnerClient({ baseUrl: runnerUrl }).execute({ code: 'return 1' });
  out.noToken = 'resolved';
} catch (err) {
  out.noToken = err instanceof ConnectError ? Code[err.code] : String(err);
}
try {
  await runner.execute({ code: 'return 1', resultKind: 'pdf' });
} catch (err) {
  out.badKind = err.message;
}
const plane = createControlPlaneClient({ baseUrl: planeUrl, token: 'admin-token-0123456789' });
try {
  await plane.workflows.listWorkflows({});
  out.plane = 'resolved';
} catch (err) {
  out.plane = err instanceof ConnectError ? [Code[err.code], err.rawMessage] : String(err);
}
out.service = RunnerService.typeName;
console.log(JSON.stringify(out));
`;

/** The same calls, type-checked: a wrong option or field is a compile error in the consumer's project. */
const TYPED = `
import { createRunnerClient, createControlPlaneClient, type ExecuteResult } from 'ldbox/client';
import { type ExecuteRequest } from 'ldbox/gen/ldbox/runner/v1/runner_pb';

export async function use(): Promise<string> {
  const runner = createRunnerClient({ baseUrl: 'http://127.0.0.1:50051', token: 'x' });
  const r: ExecuteResult = await runner.execute({ code: 'return 1', input: { a: 1 }, resultKind: 'files', limits: { timeoutMs: 1000 } });
  const plane = createControlPlaneClient({ baseUrl: 'http://127.0.0.1:8080', token: 'y' });
  const list = await plane.workflows.listWorkflows({});
  const req: Partial<ExecuteRequest> = { code: 'x' };
  return [r.error?.kind, r.files[0]?.fileName, r.stats.wallTimeMs, list.$typeName, req.code].join();
}
`;
const MISTYPED = `
import { createRunnerClient } from 'ldbox/client';
export const p = createRunnerClient({ baseUrl: 'x' }).execute({ code: 1, resultKind: 'pdf' });
`;

t.test('the packed declarations type-check a consumer, and catch its mistakes', async (t) => {
  // One tsc run for both files (a compiler start and a read of the packed declarations, ~5 s, instead of
  // two): each file is a module of its own, so what is found in one says nothing about the other, and
  // every error must be in mistyped.ts (an error anywhere else, or one of no file, fails the first check).
  const tsconfig = { compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, types: [] } };
  await writeFile(join(project, 'tsconfig.json'), JSON.stringify({ ...tsconfig, files: ['typed.ts', 'mistyped.ts'] }));
  await writeFile(join(project, 'typed.ts'), TYPED);
  await writeFile(join(project, 'mistyped.ts'), MISTYPED);
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = await run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], project);
  const errors = `${r.stdout}${r.stderr}`.split('\n').filter((l) => /error TS\d+/.test(l));
  t.same(
    errors.filter((l) => !l.startsWith('mistyped.ts(')),
    [],
    `typed.ts type-checks: ${r.stdout}${r.stderr}`,
  );
  t.equal(r.code, 2, 'tsc fails on mistyped.ts');
  t.match(r.stdout, /mistyped\.ts\(3,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
  t.match(r.stdout, /error TS2322: Type '"pdf"' is not assignable to type 'ResultKindName/);
});

t.test('the packed client calls a real runner (with a token) and a control plane', async (t) => {
  const runner = await runnerStarted;
  // A stand-in control plane: records what the client sent, answers as the gateway does without a token match.
  const seen: { path: string | undefined; headers: IncomingHttpHeaders; body: string }[] = [];
  const plane = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      seen.push({ path: req.url, headers: req.headers, body });
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'permission_denied', message: 'not this one' }));
    });
  });
  await new Promise<void>((r) => plane.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => plane.close(() => r())));
  const port = (plane.address() as { port: number }).port;

  await writeFile(join(project, 'consumer.mjs'), CONSUMER);
  const r = await run(process.execPath, ['consumer.mjs', runner.url, TOKEN, `http://127.0.0.1:${port}`], project, 60_000);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, unknown>;
  const generic = out.generic as Record<string, unknown>;
  t.same(generic.madeKeys, ['__proto__'], 'a __proto__ key of the result is kept as data');
  t.equal(generic.madeProto, true, 'and changes no prototype');
  t.same(generic.inputKeys, ['name', '__proto__'], 'a __proto__ key of the input reaches the code and comes back');
  t.same((generic.result as Record<string, unknown>).hello, 'Ada');
  t.same((generic.result as Record<string, unknown>).big, [1.5, 'two', null, true]);
  t.same(generic.logs, [{ level: 'info', message: 'token [REDACTED]' }]);
  t.equal(generic.error, undefined);
  t.same(generic.statsTypes, ['number', 'number']);
  t.equal(generic.requestId, 'string');
  t.same(out.files, [
    { fileName: 'a.txt', mimeType: 'text/plain', content: [104, 105], isText: true },
    { fileName: 'b.bin', mimeType: 'application/octet-stream', content: [1, 2, 3], isText: false },
  ]);
  t.same(out.download, {
    result: { fileName: 'x.bin', mimeType: 'application/octet-stream' },
    download: { fileName: 'x.bin', mimeType: 'application/octet-stream', content: [7, 8] },
  });
  t.same(out.failed, {
    error: { kind: 'thrown', name: 'TypeError', message: 'ld.requst is not a function — did you mean ld.request?', stack: '    at <anonymous> (user.js:1:10)' },
    requestId: 'my-id-1',
  });
  t.same(out.early, {
    result: null,
    logs: [
      { level: 'warn', message: 'ld.wait was still pending when the code returned: its result is lost (await it before returning)' },
      { level: 'warn', message: 'the code returned undefined, so the result is null: end it with a return statement' },
    ],
  });
  t.same(out.connectKeys, ['name', '__proto__'], 'the Connect protocol keeps the key too');
  t.equal(out.pool, 1);
  t.equal(out.noToken, 'Unauthenticated');
  t.equal(out.badKind, 'resultKind must be one of generic, files, native-search, native-download, got "pdf"');
  t.same(out.plane, ['PermissionDenied', 'not this one']);
  t.equal(out.service, 'ldbox.runner.v1.RunnerService');
  t.equal(seen.length, 1);
  t.equal(seen[0]!.path, '/ldbox.workflows.v1.WorkflowService/ListWorkflows');
  t.equal(seen[0]!.headers.authorization, 'Bearer admin-token-0123456789');
  t.equal(seen[0]!.headers['content-type'], 'application/proto', 'the Connect protocol, binary');
});
