/**
 * The `ldbox` command: `ldbox <command> [--help]`, `ldbox --help`, `ldbox --version`. Arguments are parsed
 * with `node:util` `parseArgs`; `--help` of a command prints its usage and its settings (from the config
 * modules) and starts nothing. Exit codes: 0 ok, 1 failure, 2 bad usage or a configuration error (one line
 * on stderr, no stack).
 *
 * Tests: test/cli/help-and-version.test.ts, test/cli/config-errors.test.ts, test/cli/unknown-settings.test.ts.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { acceptedValues, ConfigError, type SettingSpec, shownDefault } from '../config/env-parsers.js';
import { type Command, COMMAND_SETTINGS, unknownSettingWarnings } from './known-settings.js';
import { loadLogLevel } from '../config/log-config.js';
import type { Logger } from '../logging/logger.js';
import { CHECK_ABOUT, CHECK_USAGE, CONTROL_PLANE_USAGE_LINES, REENCRYPT_ABOUT, RUN_ABOUT, RUN_USAGE } from './command-usage.js';
import { isParseArgsError, usageMessage } from './usage-message.js';

// A command's module (a role, the pool, the NATS client, TypeScript) is imported when that command runs, so
// `--help`, `--version` and a usage or configuration error answer in ~0.2 s instead of ~0.6 s.

const USAGE = `usage: ldbox <command> [--help]
       ldbox --help | --version

  dev [--cluster 3]   everything on one machine: nats-server (or a 3-node cluster), runner, executor and gateway (see README)
  runner              the sandbox runner (gRPC/Connect on LDBOX_RUNNER_PORT, default 50051)
  gateway             the webhook gateway and control plane (HTTP on LDBOX_GATEWAY_PORT, default 8080; needs NATS_URL)
  executor            runs queued workflows on the runners of LDBOX_RUNNER_URLS (health and metrics on LDBOX_EXECUTOR_PORT, default 8081)
  run FILE.js [...]   run integration code locally in the sandbox (- reads it from stdin)
  check FILE.js [...] type-check integration code against the sandbox's globals and a result kind (needs typescript)
  reencrypt           seal every stored node auth value with the current LDBOX_DATA_KEY (after a key rotation)
${CONTROL_PLANE_USAGE_LINES}

'ldbox <command> --help' shows a command's options and settings (environment variables).
`;

/** What each command is, for its --help. */
const ABOUT: Record<Command, string> = {
  dev: 'usage: ldbox dev [--cluster N] [--help]\n\nRuns nats-server (unless NATS_URL is set), the runner, the executor and the gateway in one process, prints their URLs and tokens; Ctrl-C stops them all.\n--cluster N starts N nats-server nodes (3, 5 or 7) on loopback as one JetStream cluster instead, the stream and buckets with 3 replicas: kill a node to see the roles carry on.',
  runner:
    'usage: ldbox runner [--help]\n\nThe sandbox runner: gRPC, gRPC-Web and Connect on HTTP/2 cleartext; Connect, /healthz, /readyz and /metrics on HTTP/1.1 too.',
  gateway:
    'usage: ldbox gateway [--help]\n\nThe webhook gateway and control plane (WorkflowService, WorkspaceService) over HTTP; queues jobs in NATS JetStream.',
  executor: 'usage: ldbox executor [--help]\n\nRuns queued workflow jobs from NATS on the runners; /healthz, /readyz and /metrics over HTTP.',
  reencrypt: REENCRYPT_ABOUT,
  run: `${RUN_USAGE}\n\n${RUN_ABOUT}`,
  check: `${CHECK_USAGE}\n\n${CHECK_ABOUT}`,
};

const stdout = (s: string) => void process.stdout.write(s);
const stderr = (s: string) => void process.stderr.write(s);

/** A command's --help: what it is, then its settings (name, default, meaning and accepted values). */
export function commandHelp(command: Command): string {
  const rows = COMMAND_SETTINGS[command].map((s: SettingSpec) => {
    const accepts = acceptedValues(s);
    return [s.name, shownDefault(s), accepts === '' ? s.meaning : `${s.meaning} [${accepts}]`] as const;
  });
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length), 'default'.length);
  const line = (a: string, b: string, c: string) => `  ${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`.trimEnd();
  const sizes = COMMAND_SETTINGS[command].some((s) => s.kind === 'size')
    ? '\nSizes are bytes (…_BYTES) or MiB (…_MB) as plain numbers, or take a unit: 512KiB, 8MiB, 1GiB, 8MB (8,000,000 bytes).\n'
    : '';
  return `${ABOUT[command]}\n\nSettings (environment):\n${line('name', 'default', 'meaning [accepted values]')}\n${rows.map((r) => line(...r)).join('\n')}\n${sizes}`;
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** A bad argument of a command (exit 2). */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

const COMMANDS: readonly string[] = ['runner', 'gateway', 'executor', 'dev', 'run', 'check', 'reencrypt', 'workflows', 'executions'];

/** The CLI entry: returns the exit code (0 ok, 1 failure, 2 bad usage or configuration error). */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first.startsWith('-') || first === 'help') {
    let values;
    try {
      ({ values } = parseArgs({
        args: first === 'help' ? rest : [...argv],
        options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
        strict: true,
      }));
    } catch (err) {
      stderr(`${usageMessage(err)}\n${USAGE}`);
      return 2;
    }
    if (values.version) {
      stdout(`${packageVersion()}\n`);
      return 0;
    }
    stdout(USAGE);
    return first === undefined ? 2 : 0;
  }
  if (!COMMANDS.includes(first)) {
    stderr(`unknown command "${first}"\n${USAGE}`);
    return 2;
  }
  if (first === 'workflows' || first === 'executions') {
    warnUnknownSettings();
    const { runControlPlaneCommand } = await import('./control-plane-commands.js');
    return await runControlPlaneCommand(first, rest, process.env, { stdout, stderr }, { untilSignal });
  }
  const command = first as Command;
  try {
    if (command === 'run') {
      if (wantsHelp(rest)) return help(command);
      warnUnknownSettings();
      const { runCommand } = await import('./run-command.js');
      return await runCommand(rest, process.env, { stdout, stderr }, { stdin: process.stdin, untilStopped: untilSignal });
    }
    if (command === 'check') {
      if (wantsHelp(rest)) return help(command);
      warnUnknownSettings();
      const { checkCommand } = await import('./check-command.js');
      return await checkCommand(rest, process.env, { stdout, stderr });
    }
    // The services take no arguments but --help; `dev` takes --cluster N too.
    const { values } = parseArgs({
      args: [...rest],
      options: { help: { type: 'boolean', short: 'h' }, ...(command === 'dev' ? { cluster: { type: 'string' } } : {}) },
      strict: true,
      allowPositionals: false,
    });
    if (values.help) return help(command);
    const cluster = command === 'dev' ? parseClusterSize((values as { cluster?: string }).cluster) : undefined;
    warnUnknownSettings();
    switch (command) {
      case 'runner':
        return await serveRunner();
      case 'dev': {
        const { runDev } = await import('../dev/dev-command.js');
        return await runDev(process.env, { stdout, stderr }, untilSignal(), { clusterSize: cluster });
      }
      case 'gateway':
        return await serveGateway();
      case 'executor':
        return await serveExecutor();
      case 'reencrypt': {
        const { runReencrypt } = await import('./reencrypt-command.js');
        return await runReencrypt(process.env, { stdout, stderr });
      }
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      stderr(`configuration error: ${err.message}\n`);
      return 2;
    }
    if (err instanceof UsageError) {
      stderr(`${err.message}\nsee 'ldbox ${command} --help'\n`);
      return 2;
    }
    if (isParseArgsError(err)) {
      stderr(`${usageMessage(err)}\nsee 'ldbox ${command} --help'\n`);
      return 2;
    }
    const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
    if (e?.code === 'EADDRINUSE' || e?.code === 'EACCES' || e?.code === 'EADDRNOTAVAIL') {
      const what = e.code === 'EADDRINUSE' ? 'is in use' : e.code === 'EACCES' ? 'needs privileges' : 'is not an address of this machine';
      stderr(
        `ldbox ${command}: cannot listen on ${e.address ?? '?'}:${e.port ?? '?'}: the address ${what} (${e.code}); set the role's LDBOX_*_PORT or _HOST\n`,
      );
      return 1;
    }
    throw err;
  }
}

/** `ldbox dev --cluster N`: an odd number of nodes from 3 to 7 (JetStream needs a majority). */
function parseClusterSize(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (n !== 3 && n !== 5 && n !== 7) throw new UsageError(`--cluster takes the number of NATS nodes: 3, 5 or 7 (an odd number, for a majority), got "${raw}"`);
  return n;
}

/** `--help` or `-h` among `ldbox run`'s or `ldbox check`'s arguments (before a `--` terminator). */
function wantsHelp(args: readonly string[]): boolean {
  const { tokens } = parseArgs({ args: [...args], strict: false, allowPositionals: true, tokens: true });
  return tokens.some((t) => t.kind === 'option' && (t.name === 'help' || t.name === 'h'));
}

function help(command: Command): number {
  stdout(commandHelp(command));
  return 0;
}

/** One line on stderr for each LDBOX_* variable that is no setting, with the nearest name. */
function warnUnknownSettings(): void {
  for (const w of unknownSettingWarnings(process.env)) stderr(`warning: ${w}\n`);
}

/** Resolves on SIGINT or SIGTERM; a second one while stopping exits at once. */
function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      const force = () => {
        stderr('stopping now, without waiting for running work\n');
        process.exit(130);
      };
      process.once('SIGINT', force);
      process.once('SIGTERM', force);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

type Start<C> = (config: C, log: Logger) => Promise<{ port: number; close(): Promise<void> }>;

/**
 * Runs one role until SIGINT/SIGTERM: start it, print where it listens, then close it. `loadStart` imports
 * the role's module after its settings (`config`, the log level) have been read.
 */
async function serve<C extends { host: string }>(
  role: string,
  config: C,
  loadStart: () => Promise<Start<C>>,
  describe: (url: string) => string,
): Promise<number> {
  const level = loadLogLevel(process.env);
  const start = await loadStart();
  const { createLogger } = await import('../logging/logger.js');
  const log = createLogger(role, level);
  const running = await start(config, log);
  const scheme = 'tls' in config && config.tls ? 'https' : 'http';
  // The handlers first: whoever reads the line below may signal at once, and a SIGTERM before them would
  // kill the process without its drain (seen in a test on a loaded machine: exit by signal, not 0).
  const signalled = untilSignal();
  stdout(`${role}: ${describe(`${scheme}://${config.host}:${running.port}`)}\n`);
  await signalled;
  log.info('shutting down');
  await running.close();
  return 0;
}

// Each role reads its settings before its module is imported: a configuration error then answers in
// ~0.17 s instead of ~0.45 s (~0.65 s for the gateway).
async function serveGateway(): Promise<number> {
  const { loadGatewayConfig } = await import('../../gateway/gateway-config.js');
  const config = loadGatewayConfig(process.env);
  const loadStart = async () => (await import('../../gateway/index.js')).startGateway;
  return serve('gateway', config, loadStart, (url) => `${url} (webhooks under /api/hooks/workflows/, control plane, /healthz, /readyz, /metrics)`);
}

async function serveExecutor(): Promise<number> {
  const { loadExecutorConfig } = await import('../executor/executor-config.js');
  const config = loadExecutorConfig(process.env);
  const loadStart = async () => (await import('../executor/index.js')).startExecutor;
  return serve('executor', config, loadStart, (url) => `${url} (/healthz, /readyz, /metrics); runners ${config.runnerUrls.join(', ')}`);
}

async function serveRunner(): Promise<number> {
  const { loadRunnerConfig } = await import('../../runner/config/index.js');
  const config = loadRunnerConfig(process.env);
  const loadStart = async () => {
    const { applyHeapGrowth, startRunnerServer } = await import('../../runner/server/index.js');
    // Process-wide, so only where the runner has the process to itself (not under `ldbox dev`).
    applyHeapGrowth(config.heapGrowthPercent);
    return startRunnerServer;
  };
  return serve('runner', config, loadStart, (url) => `${url} (gRPC, gRPC-Web, Connect; /healthz, /readyz, /metrics over HTTP/1.1 too)`);
}
