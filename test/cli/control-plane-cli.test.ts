/**
 * `ldbox workflows …` and `ldbox executions …` (the real bin/ldbox.js in a child process) against a running
 * stack (nats-server, gateway, runner, executor): apply creates, updates and leaves unchanged by name, and
 * prints the control plane's refusals as they are; ls with filters; show; replay; tail printing a new
 * execution until Ctrl-C; bad arguments and settings (exit 2); a wrong token and an unreachable gateway
 * (exit 1, one line).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createFlow, sharedRunner, stackFixture, waitForFinish } from '../executor/harness.js';
import { ADMIN_TOKEN, hook, rpc } from '../gateway/harness.js';
import { BIN, cleanEnv, inParallel, ldbox, nodeChild } from '../helpers/ldbox-cli.js';
import { freePort } from '../helpers/nats-server.js';

// The first subtest runs against a stack of its own; the other three need none (an unreachable gateway, or
// none at all): they run while the stack starts and the first one's calls wait on the gateway.
t.jobs = 4;

const dir = mkdtempSync(join(tmpdir(), 'ldbox-cli-'));
let files = 0;
/** Writes `text` to a new file named `*.{ext}` and returns its path. */
function file(ext: string, text: string): string {
  const path = join(dir, `wf-${++files}.${ext}`);
  writeFileSync(path, text);
  return path;
}

/** Sends a webhook to a workflow with AUTH_METHOD_NONE and returns the execution id. */
async function send(base: string, workflowId: string, body: unknown): Promise<string> {
  const r = await hook(base, workflowId, { body });
  if (r.status !== 202) throw new Error(`webhook: ${r.status} ${r.text}`);
  return r.json.executionId;
}

const FAILING = {
  id: 'a',
  code: 'if (data.input.fail) throw new Error("asked to fail"); return { n: data.input.n };',
  input: { fail: '{{trigger.output.body.fail}}', n: '{{trigger.output.body.n}}' },
};

// The file's runner, a process of its own (harness.ts: one in this process runs under tap's slow module loader).
const runner = sharedRunner(t);

t.test('the control-plane commands against a running gateway', async (t) => {
  const stack = await stackFixture(t, { runner: await runner() });
  const { base } = stack;
  const env = { LDBOX_URL: base, LDBOX_ADMIN_TOKEN: ADMIN_TOKEN };
  const cli = (...args: string[]) => ldbox(args, env);

  await t.test('workflows apply: created, unchanged, updated, by name in the workspace', async (t) => {
    const yaml = (code: string) => `name: greet
nodes:
  - id: hello
    code: ${JSON.stringify(code)}
    input:
      name: "{{trigger.output.body.name}}"
webhook:
  authMethod: AUTH_METHOD_NONE
`;
    const first = file('yaml', yaml('return { greeting: "hello " + data.input.name };'));
    const created = await cli('workflows', 'apply', '-f', first);
    t.equal(created.code, 0, created.stderr);
    t.equal(created.stderr, '');
    const m = /^created {4}(wf_\w{20}) {2}version 1 {2}"greet" \(workspace default\)\n {11}webhook (\S+)\n$/.exec(created.stdout);
    t.ok(m, created.stdout);
    const id = m![1]!;
    t.equal(m![2], `${base}/api/hooks/workflows/${id}`, 'the webhook URL is printed');
    const read = (await rpc(base, 'GetWorkflow', { id })).json.workflow;
    t.equal(read.workspace, 'default', 'a file without workspace goes to the default workspace');
    t.equal(read.nodes[0].input.name, '{{trigger.output.body.name}}');

    const again = await cli('workflows', 'apply', '-f', first);
    t.equal(again.code, 0, again.stderr);
    t.equal(again.stdout, `unchanged  ${id}  version 1  "greet" (workspace default)\n`);

    const changed = await cli('workflows', 'apply', '-f', file('yaml', yaml('return { greeting: "hi " + data.input.name };')));
    t.equal(changed.code, 0, changed.stderr);
    t.equal(changed.stdout, `updated    ${id}  version 2  "greet" (workspace default)  (was version 1)\n`);
    const ex = await waitForFinish(base, await send(base, id, { name: 'Ada' }));
    t.same(ex.nodes[0].output, { greeting: 'hi Ada' }, 'the updated code runs behind the same URL');
    t.equal(ex.workflowVersion, 2);

    t.test('a list in JSON with a workspace flag; the same name elsewhere is another workflow', async (t) => {
      const list = file(
        'json',
        JSON.stringify([
          { name: 'greet', nodes: [{ id: 'a', code: 'return 1' }] },
          { name: 'second', nodes: [{ id: 'b', code: 'return 2' }], webhook: { authMethod: 'AUTH_METHOD_HEADER' } },
        ]),
      );
      const r = await cli('workflows', 'apply', '-f', list, '--workspace', 'team-b', '--json');
      t.equal(r.code, 0, r.stderr);
      const results = JSON.parse(r.stdout);
      t.same(
        results.map((x: any) => [x.action, x.name, x.workspace, x.version]),
        [
          ['created', 'greet', 'team-b', 1],
          ['created', 'second', 'team-b', 1],
        ],
      );
      t.not(results[0].id, id, 'greet of team-b is not greet of default');
      t.match(results[0].secret, /^whsec_/, 'no webhook settings: the legacy query secret, generated and shown once');
      t.match(results[1].secret, /^whsec_/, 'the header secret, shown once');
    });

    t.test('a refusal of the control plane is printed as it is, exit 1', async (t) => {
      const bad = file('yaml', 'name: greet\nnodes:\n  - id: hello\n    code: "return {"\n');
      const r = await cli('workflows', 'apply', '-f', bad);
      t.equal(r.code, 1);
      t.equal(r.stdout, '');
      t.match(
        r.stderr,
        /^ldbox workflows apply: "greet": workflow\.nodes\[0\]\.code: node "hello" does not parse: .* at line 1, column \d+ \(invalid_argument\)\n$/,
      );
      t.equal((await rpc(base, 'GetWorkflow', { id })).json.workflow.version, 2, 'nothing changed');
    });

    t.test('a file the CLI cannot use is exit 2 before any call', async (t) => {
      const cases: [string, string][] = [
        [file('yaml', 'nodes: []\n'), 'name is required (apply matches workflows by name)'],
        [file('yaml', 'name: x\nnodes: [\n'), 'is not valid YAML: '],
        [file('json', '{"name": "x", "nodez": []}'), 'key "nodez" is unknown'],
        [join(dir, 'missing.yaml'), 'cannot read '],
      ];
      const results = await inParallel(cases, ([path]) => cli('workflows', 'apply', '-f', path));
      for (const [i, [path, message]] of cases.entries()) {
        const r = results[i]!;
        t.equal(r.code, 2, path);
        t.match(r.stderr, message, path);
        t.match(r.stderr, /\nsee 'ldbox workflows apply --help'\n$/);
      }
    });
  });

  await t.test('workflows ls: a table, or JSON', async (t) => {
    const [r, all] = await Promise.all([cli('workflows', 'ls', '--workspace', 'team-b'), cli('workflows', 'ls', '--json')]);
    t.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    t.match(lines[0], /^ID +NAME +WORKSPACE +VERSION +NODES +AUTH +UPDATED$/);
    t.equal(lines.length, 3);
    t.match(r.stdout, /\nwf_\w{20} +greet +team-b +1 +1 +legacy +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n/);
    t.match(r.stdout, /\nwf_\w{20} +second +team-b +1 +1 +header +/);
    const json = JSON.parse(all.stdout);
    t.same(json.map((w: any) => `${w.workspace}/${w.name}`).sort(), ['default/greet', 'team-b/greet', 'team-b/second']);
  });

  const wf = await createFlow(base, [FAILING], { workspace: 'ops' });
  const other = await createFlow(base, [FAILING], { workspace: 'ops' });
  const ok1 = await waitForFinish(base, await send(base, wf.id, { fail: false, n: 1 }));
  const failed = await waitForFinish(base, await send(base, wf.id, { fail: true, n: 2 }));
  const okOther = await waitForFinish(base, await send(base, other.id, { fail: false, n: 3 }));

  await t.test('executions ls with filters', async (t) => {
    // Five reads of the same executions: they run at the same time.
    const [all, onlyFailed, two, limited, future] = await Promise.all([
      cli('executions', 'ls', '--since', '1h', '--limit', '100'),
      cli('executions', 'ls', '--status', 'FAILED', '--workflow', wf.id),
      cli('executions', 'ls', '--status', 'failed,succeeded', '--workflow', wf.id, '--json'),
      cli('executions', 'ls', '--limit', '1', '--workflow', wf.id),
      cli('executions', 'ls', '--since', new Date(Date.now() + 3_600_000).toISOString()),
    ]);
    t.equal(all.code, 0, all.stderr);
    const header = all.stdout.split('\n', 1)[0]!;
    t.match(header, /^ID +WORKFLOW +VERSION +STATUS +CREATED +DURATION +COST +ERROR$/);
    const idsOf = (out: string) => [...out.matchAll(/^(ex_\w{26}) /gm)].map((x) => x[1]);
    t.same(idsOf(all.stdout).slice(0, 3), [okOther.id, failed.id, ok1.id], 'newest first, across workflows');

    t.equal(onlyFailed.code, 0, onlyFailed.stderr);
    t.same(idsOf(onlyFailed.stdout), [failed.id]);
    t.match(onlyFailed.stdout, new RegExp(`\\n${failed.id} +${wf.id} +1 +failed +\\S+ +\\d+ ms +1 +node "a" failed: .*asked to fail`));

    t.same(
      JSON.parse(two.stdout).map((e: any) => [e.id, e.status]),
      [
        [failed.id, 'EXECUTION_STATUS_FAILED'],
        [ok1.id, 'EXECUTION_STATUS_SUCCEEDED'],
      ],
    );
    t.same(idsOf(limited.stdout), [failed.id], '--limit');
    t.equal(future.code, 0);
    t.equal(future.stdout, '');
    t.equal(future.stderr, 'no executions\n');
  });

  await t.test('executions show: status, trigger, nodes, output, logs, error, timings, cost', async (t) => {
    // Four reads: they run at the same time.
    const [r, ok, shownJson, missing] = await Promise.all([
      cli('executions', 'show', failed.id),
      cli('executions', 'show', ok1.id),
      cli('executions', 'show', failed.id, '--json'),
      cli('executions', 'show', 'ex_0000000000000000000000000z'),
    ]);
    t.equal(r.code, 0, r.stderr);
    t.match(
      r.stdout,
      new RegExp(`^execution +${failed.id}\\nstatus +failed\\nerror +node "a" failed: .*asked to fail.*\\nworkflow +${wf.id} \\(version 1\\)\\n`),
    );
    t.match(
      r.stdout,
      /\ncreated +\d{4}-\d\d-\d\dT[\d:]+Z\nstarted +\S+ \(queued \d+ ms\)\nfinished +\S+ \(ran \d+ ms\)\nattempts +1\ncost +(1 unit|([2-9]|[1-9]\d+) units)\n/,
    );
    t.match(r.stdout, /\ntrigger +POST\n {2}headers +\{.*"content-type":"application\/json".*\}\n {2}query +\{\}\n {2}body +\{"fail":true,"n":2\}\n/);
    t.match(r.stdout, /\n\nnodes \(1\)\n {2}a {2}failed {2}\d+ ms {2}\(started \S+\)\n {4}error {3}code: .*asked to fail\n {12}thrown Error: asked to fail\n/);
    t.match(ok.stdout, /\n {2}a {2}succeeded .*\n {4}output {2}\{"n":1\}\n/);
    const json = JSON.parse(shownJson.stdout);
    t.equal(json.id, failed.id);
    t.equal(json.status, 'EXECUTION_STATUS_FAILED');
    t.equal(missing.code, 1);
    t.equal(missing.stderr, 'ldbox executions show: execution ex_0000000000000000000000000z not found (not_found)\n');
  });

  await t.test('executions replay prints the new execution id', async (t) => {
    const r = await cli('executions', 'replay', failed.id);
    t.equal(r.code, 0, r.stderr);
    const m = /^(ex_\w{26})\n$/.exec(r.stdout);
    t.ok(m, r.stdout);
    const replayed = await waitForFinish(base, m![1]!);
    t.equal(replayed.replayOf, failed.id);
    t.equal(replayed.status, 'EXECUTION_STATUS_FAILED', 'the same trigger fails the same way');
  });

  await t.test('executions tail prints a new execution and its end, and Ctrl-C exits 0', async (t) => {
    const child = spawn(...nodeChild([BIN, 'executions', 'tail', '--workflow', other.id]), { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString('utf8');
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const until = async (re: RegExp, what: string) => {
      const end = Date.now() + 60_000; // bounds a failing run only: tail prints as soon as it sees the change
      while (!re.test(stdout)) {
        if (Date.now() > end) throw new Error(`tail did not print ${what}; stdout: ${stdout}; stderr: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await until(new RegExp(`${okOther.id}  ${other.id}  succeeded`), 'the latest execution first');
    const fresh = await send(base, other.id, { fail: false, n: 4 });
    // The cost is 1 unit per started 100 ms of sandbox time: 1 here, 2 when a busy machine slows the sandbox.
    await until(new RegExp(`^\\S+Z  ${fresh}  ${other.id}  succeeded  \\d+ ms  cost [1-9]\\d*$`, 'm'), 'the new execution, succeeded');
    t.notMatch(stdout, failed.id, 'only the workflow asked for');
    child.kill('SIGINT');
    t.equal(await exited, 0, 'Ctrl-C is a clean exit');
    t.equal(stderr, '');
    const lines = stdout.trimEnd().split('\n');
    t.equal(lines.filter((l) => l.includes(fresh) && l.includes('succeeded')).length, 1, 'each status once');
  });

  await t.test('a wrong token: exit 1 with the gateway message', async (t) => {
    const r = await ldbox(['executions', 'ls'], { ...env, LDBOX_ADMIN_TOKEN: 'wrong-token-0123456789' });
    t.equal(r.code, 1);
    t.equal(r.stdout, '');
    t.equal(
      r.stderr,
      `ldbox executions ls: missing or wrong admin token: send Authorization: Bearer <LDBOX_ADMIN_TOKEN> (the gateway at ${base} refused LDBOX_ADMIN_TOKEN)\n`,
    );
  });
});

t.test('an unreachable gateway: exit 1, one line, no stack', async (t) => {
  const url = `http://127.0.0.1:${await freePort()}`;
  const commands = [
    ['executions', 'ls'],
    ['workflows', 'ls'],
  ];
  const results = await inParallel(commands, (args) => ldbox(args, { LDBOX_URL: url, LDBOX_ADMIN_TOKEN: ADMIN_TOKEN }));
  for (const [i, args] of commands.entries()) {
    const r = results[i]!;
    t.equal(r.code, 1, args.join(' '));
    t.equal(
      r.stderr,
      `ldbox ${args.join(' ')}: cannot reach the gateway at ${url}: connection refused (ECONNREFUSED); is it running, and is LDBOX_URL right?\n`,
    );
  }
});

t.test('bad arguments and settings: exit 2, one line, no call', async (t) => {
  const env = { LDBOX_URL: 'http://127.0.0.1:9', LDBOX_ADMIN_TOKEN: ADMIN_TOKEN };
  const see = (cmd: string) => `\nsee 'ldbox ${cmd} --help'\n`;
  const cases: [string[], Record<string, string>, string][] = [
    [
      ['executions', 'ls', '--status', 'failed,done'],
      env,
      `--status takes queued, running, succeeded, failed, cancelled (comma-separated, any case), got "done"${see('executions ls')}`,
    ],
    [
      ['executions', 'ls', '--since', '1w'],
      env,
      `--since takes a time before now (30s, 30m, 1h, 2d) or an RFC 3339 time (2026-11-24T10:00:00Z), got "1w"${see('executions ls')}`,
    ],
    [['executions', 'ls', '--limit', '0'], env, `--limit must be a whole number from 1 to 10000, got "0"${see('executions ls')}`],
    [['executions', 'ls', '--workflow', 'x'], env, `--workflow must be a workflow id (wf_ and 20 characters of 0-9 a-z), got "x"${see('executions ls')}`],
    [['executions', 'ls', '--nope'], env, `unknown option --nope${see('executions ls')}`],
    [['executions', 'show'], env, `ID is required${see('executions show')}`],
    [['executions', 'show', 'ex_1', 'extra'], env, `unexpected argument "extra"${see('executions show')}`],
    [['executions', 'replay', 'wf_1'], env, `ID must be an execution id (ex_ and 26 characters of 0-9 a-z), got "wf_1"${see('executions replay')}`],
    [['executions', 'tail', '--since'], env, `--since needs a value${see('executions tail')}`],
    [['executions', 'rm'], env, `unknown command "executions rm"\nsee 'ldbox executions --help'\n`],
    [['workflows', 'apply'], env, `-f FILE is required: the workflow file (YAML or JSON)${see('workflows apply')}`],
    [['workflows', 'apply', '-f', 'x.yaml', '--workspace', 'a b'], env, 'starting with a letter or digit), got "a b"'],
    [
      ['executions', 'ls'],
      { LDBOX_URL: env.LDBOX_URL },
      "configuration error: LDBOX_ADMIN_TOKEN is required: the gateway's admin token (`ldbox dev` writes it to .ldbox/admin-token)\n",
    ],
    [['workflows', 'ls'], { ...env, LDBOX_ADMIN_TOKEN: 'short' }, 'configuration error: LDBOX_ADMIN_TOKEN must be at least 16 characters long\n'],
    [
      ['workflows', 'ls'],
      { ...env, LDBOX_URL: 'ftp://x' },
      `configuration error: LDBOX_URL must be the gateway's http://host:port or https://host:port, got "ftp://x"\n`,
    ],
  ];
  // Every case is its own process that stops at its arguments or settings: they run a few at a time.
  const results = await inParallel(cases, ([args, e]) => ldbox(args, e));
  for (const [i, [args, , stderr]] of cases.entries()) {
    const r = results[i]!;
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stdout, '', args.join(' '));
    if (stderr.endsWith('\n')) t.equal(r.stderr, stderr, args.join(' '));
    else t.match(r.stderr, stderr, args.join(' '));
  }
});

t.test('--help of each command: usage, options and settings, exit 0', async (t) => {
  const commands = [
    ['workflows', '--help'],
    ['workflows', 'apply', '--help'],
    ['workflows', 'ls', '-h'],
    ['executions', 'help'],
    ['executions', 'ls', '--help'],
    ['executions', 'show', '--help'],
    ['executions', 'replay', '--help'],
    ['executions', 'tail', '--help'],
  ];
  const results = await inParallel(commands, (args) => ldbox(args));
  for (const [i, args] of commands.entries()) {
    const r = results[i]!;
    t.equal(r.code, 0, args.join(' '));
    t.equal(r.stderr, '', args.join(' '));
    t.match(r.stdout, new RegExp(`^usage: ldbox ${args[0]} `), args.join(' '));
    t.match(r.stdout, /\n {2}LDBOX_URL +http:\/\/127\.0\.0\.1:8080 +the gateway/, args.join(' '));
    t.match(r.stdout, /\n {2}LDBOX_ADMIN_TOKEN +required +/, args.join(' '));
  }
});
