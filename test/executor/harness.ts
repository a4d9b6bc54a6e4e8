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
import { sleep } from '../nats/util.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

export interface StackFixture extends GatewayFixture {
  runner: TestRunner | undefined;
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
  runner?: TestRunner;
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
  let runner: TestRunner | undefined = opts.noRunner ? undefined : opts.runner;
  if (!opts.noRunner && !runner) {
    runner = await startTestRunner(opts.runnerEnv ?? {});
    t.teardown(() => runner!.close());
  }
  const executorEnv = {
    NATS_URL: gw.nats.url,
    ...opts.natsEnv?.(gw.nats),
    LDBOX_EXECUTOR_PORT: '0',
    LDBOX_RUNNER_URLS: runner ? runner.url : 'http://127.0.0.1:9',
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
  return { ...gw, runner, executor, startExecutor: start, executorEnv };
}

/**
 * One runner for the tests of a file (started on first use, closed when `root` ends): a runner's pool
 * workers load QuickJS on their first calls, 2-5 s of both cores, which a runner per test pays every
 * time. A runner keeps no state between calls that a test could see, so tests that only need *a*
 * runner share it; a test that stops or reconfigures its runner starts its own. `root` is the file's
 * top-level tap object.
 */
export function sharedRunner(root: Test, env: Record<string, string> = {}): () => Promise<TestRunner> {
  let runner: Promise<TestRunner> | undefined;
  return () => {
    if (!runner) {
      runner = startTestRunner(env);
      const started = runner;
      root.teardown(async () => (await started).close());
    }
    return runner;
  };
}

/**
 * One whole stack for the tests of a file that need only fresh workflows and execution ids, not a fresh
 * nats-server, gateway or executor (started on first use with `opts`, torn down when `root` ends). Such
 * tests create their own workflows (fresh ids) and, where they check a workspace's spend, their own
 * workspace; a test that kills or restarts a part, or counts what the executor did, takes a fresh stack.
 * `sharedRunner`: the file's {@link sharedRunner}, for the stack to use too.
 */
export function sharedStack(root: Test, opts: StackOptions & { sharedRunner?: () => Promise<TestRunner> } = {}): () => Promise<StackFixture> {
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

/** Polls GetExecution until the execution is succeeded or failed; fails the wait after `timeoutMs`. */
export async function waitForFinish(base: string, id: string, timeoutMs = 20_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < end) {
    last = await getExecution(base, id);
    if (last && (last.status === 'EXECUTION_STATUS_SUCCEEDED' || last.status === 'EXECUTION_STATUS_FAILED')) return last;
    await sleep(50);
  }
  throw new Error(`execution ${id} did not finish within ${timeoutMs} ms; last record: ${JSON.stringify(last)}`);
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
