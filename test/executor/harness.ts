/**
 * The whole webhook path on loopback: a real nats-server, the gateway, a runner and an executor (all
 * in-process unless a test spawns the executor itself), plus helpers to wait for an execution's record.
 */
import type { Test } from 'tap';
import { loadExecutorConfig } from '../../src/executor/executor-config.js';
import { type Executor, startExecutor } from '../../src/executor/index.js';
import { createLogger, type Logger, silentLogger } from '../../src/logging/logger.js';
import type { NatsServerOptions, TestNatsServer } from '../helpers/nats-server.js';
import { gatewayFixture, type GatewayFixture, rpc } from '../gateway/harness.js';
import { startTestRunner, type TestRunner } from '../helpers/runner-harness.js';
import { type RoleProcess, startRole } from '../helpers/role-process.js';
import { sleep } from '../nats/util.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

export interface StackFixture extends GatewayFixture {
  /** The fixture's own in-process runner; undefined with `noRunner` or when given one (`runner`). */
  runner: TestRunner | undefined;
  /** The runner the fixture's executors call: its own, or the one given; undefined with `noRunner`. */
  runnerUrl: string | undefined;
  executor: Executor | undefined;
  /** Starts (another) in-process executor with the fixture's settings plus `env`. */
  startExecutor(env?: Record<string, string>): Promise<Executor>;
  executorEnv: Record<string, string>;
}

export interface StackOptions {
  /** Env of the in-process executor (runner URLs default to the fixture's runner). */
  executorEnv?: Record<string, string>;
  runnerEnv?: Record<string, string>;
  /** Start no runner (the executor's runner URL then points at a closed port unless set). */
  noRunner?: boolean;
  /**
   * Use this runner (started by the caller, e.g. {@link sharedRunner}) instead of starting one; the
   * fixture does not close it. `runnerEnv` then does not apply.
   */
  runner?: RunnerAtUrl;
  /** Start no executor (the test starts its own). */
  noExecutor?: boolean;
  /** Flags of the nats-server (auth, TLS). */
  natsOpts?: NatsServerOptions;
  /** NATS_* settings of the gateway and the executor that depend on the server (NATS_URL with credentials, …). */
  natsEnv?: (nats: TestNatsServer) => Record<string, string>;
  /** Loggers of the gateway and the in-process executors (default: silent). */
  gatewayLog?: Logger;
  executorLog?: Logger;
}

/** Fast retries so that redelivery tests take seconds. */
export const FAST_RETRY = (): number => 200;

export async function stackFixture(t: Test, opts: StackOptions = {}): Promise<StackFixture> {
  // LDBOX_TEST_NATS_TRACE=/tmp/nats.log writes nats-server's protocol trace there, for a test that needs explaining.
  const trace = process.env.LDBOX_TEST_NATS_TRACE ? ['-V', '-l', process.env.LDBOX_TEST_NATS_TRACE] : [];
  const natsOpts = { ...opts.natsOpts, args: [...(opts.natsOpts?.args ?? []), ...trace] };
  const gw = await gatewayFixture(t, {}, natsOpts, { natsEnv: opts.natsEnv, log: opts.gatewayLog });
  let runner: TestRunner | undefined;
  if (!opts.noRunner && !opts.runner) {
    runner = await startTestRunner(opts.runnerEnv ?? {});
    t.teardown(() => runner!.close());
  }
  const runnerUrl = opts.noRunner ? undefined : (opts.runner?.url ?? runner?.url);
  const executorEnv = {
    NATS_URL: gw.nats.url,
    ...opts.natsEnv?.(gw.nats),
    LDBOX_EXECUTOR_PORT: '0',
    LDBOX_RUNNER_URLS: runnerUrl ?? 'http://127.0.0.1:9',
    LDBOX_EXECUTOR_CONCURRENCY: '4',
    LDBOX_DATA_KEY: TEST_DATA_KEY,
    ...opts.executorEnv,
  };
  const start = async (env: Record<string, string> = {}): Promise<Executor> => {
    // LDBOX_TEST_LOG=debug shows the executor's log when a test needs explaining.
    const log = opts.executorLog ?? (process.env.LDBOX_TEST_LOG ? createLogger('executor', process.env.LDBOX_TEST_LOG) : silentLogger());
    const ex = await startExecutor(loadExecutorConfig({ ...executorEnv, ...env }), log, {
      nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50, connectTimeoutMs: 1000 },
      pullExpiresMs: 1000,
      retryDelayMs: FAST_RETRY,
    });
    t.teardown(() => ex.close(2000));
    return ex;
  };
  const executor = opts.noExecutor ? undefined : await start();
  return { ...gw, runner, runnerUrl, executor, startExecutor: start, executorEnv };
}

/** A runner the executors reach at `url`: an in-process TestRunner, or a runner process. */
export interface RunnerAtUrl {
  url: string;
}

/**
 * One runner for the tests of a file that only need *a* runner (started on first use, stopped when
 * `root` ends): the real runner role, `ldbox runner` in a process of its own (role-process.ts), with
 * `env` (pool of 2, no warm-up unless `env` says otherwise). A runner's pool workers load QuickJS and
 * the builtins on their first calls: 2-5 s of both cores in the test process, where tap's module
 * loader slows every module the workers load, against ~1-1.5 s in a process started without it; a
 * runner per test paid that every time. A runner keeps no state between calls that a test could see;
 * a test that stops or reconfigures its runner starts its own. `root` is the file's top-level tap object.
 */
export function sharedRunner(root: Test, env: Record<string, string> = {}): () => Promise<RunnerAtUrl> {
  let runner: Promise<RoleProcess> | undefined;
  return async () => {
    if (!runner) {
      runner = startRole('runner', { LDBOX_POOL_SIZE: '2', ...env });
      const started = runner;
      root.teardown(async () => (await started).kill());
    }
    return { url: (await runner).url };
  };
}

/**
 * One whole stack for the tests of a file that need only fresh workflows and execution ids, not a fresh
 * nats-server, gateway or executor (started on first use with `opts`, torn down when `root` ends). Such
 * tests create their own workflows (fresh ids) and, where they check a workspace's spend, their own
 * workspace; a test that kills or restarts a part, or counts what the executor did, takes a fresh stack.
 * `sharedRunner`: the file's {@link sharedRunner}, for the stack to use too.
 */
export function sharedStack(root: Test, opts: StackOptions & { sharedRunner?: () => Promise<RunnerAtUrl> } = {}): () => Promise<StackFixture> {
  let stack: Promise<StackFixture> | undefined;
  const start = async () => stackFixture(root, { ...opts, runner: opts.runner ?? (await opts.sharedRunner?.()) });
  return () => (stack ??= start());
}

/** GetExecution over Connect JSON; undefined while there is no record yet. */
export async function getExecution(base: string, id: string): Promise<any> {
  const r = await rpc(base, 'GetExecution', { id });
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`GetExecution: ${r.status} ${r.text}`);
  return r.json.execution;
}

/** True for a GetExecution record that is succeeded or failed. */
const isFinished = (ex: any): boolean => ex?.status === 'EXECUTION_STATUS_SUCCEEDED' || ex?.status === 'EXECUTION_STATUS_FAILED';

/** Polls GetExecution until the execution is succeeded or failed; fails the wait after `timeoutMs`. */
export async function waitForFinish(base: string, id: string, timeoutMs = 20_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < end) {
    last = await getExecution(base, id);
    if (isFinished(last)) return last;
    await sleep(50);
  }
  throw new Error(`execution ${id} did not finish within ${timeoutMs} ms; last record: ${JSON.stringify(last)}`);
}

/**
 * waitForFinish for many executions at once: one poller that asks, each round, for the executions not
 * finished yet, one after another. Not one waitForFinish per id in parallel: 40 of those poll the gateway
 * 800 times a second, which on 2 cores takes CPU from the executor running them. The finished records,
 * in the order of `ids`; fails the wait after `timeoutMs`.
 */
export async function waitForAllFinished(base: string, ids: readonly string[], timeoutMs = 20_000): Promise<any[]> {
  const end = Date.now() + timeoutMs;
  const done = new Map<string, any>();
  const last = new Map<string, any>();
  while (Date.now() < end) {
    for (const id of ids) {
      if (done.has(id)) continue;
      const ex = await getExecution(base, id);
      last.set(id, ex);
      if (isFinished(ex)) done.set(id, ex);
    }
    if (done.size === ids.length) return ids.map((id) => done.get(id));
    await sleep(50);
  }
  const pending = ids.filter((id) => !done.has(id));
  throw new Error(
    `${pending.length} of ${ids.length} executions did not finish within ${timeoutMs} ms; e.g. ${pending[0]}: ${JSON.stringify(last.get(pending[0]!))}`,
  );
}

/** CreateWorkflow with the given nodes and auth method NONE; returns the workflow JSON. */
export async function createFlow(base: string, nodes: unknown[], opts: { workspace?: string } = {}): Promise<any> {
  const r = await rpc(base, 'CreateWorkflow', { name: 'flow', workspace: opts.workspace ?? 'ws', nodes, webhook: { authMethod: 'AUTH_METHOD_NONE' } });
  if (r.status !== 200) throw new Error(`CreateWorkflow: ${r.status} ${r.text}`);
  return r.json.workflow;
}

export async function getWorkspace(base: string, name: string): Promise<any> {
  const r = await rpc(base, 'GetWorkspace', { name }, { service: 'ldbox.workflows.v1.WorkspaceService' });
  if (r.status !== 200) throw new Error(`GetWorkspace: ${r.status} ${r.text}`);
  return r.json.workspace;
}
