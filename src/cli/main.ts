import { ConfigError } from '../config/env-parsers.js';
import { loadGatewayConfig } from '../config/gateway-config.js';
import { loadExecutorConfig } from '../config/executor-config.js';
import { loadRunnerConfig } from '../config/runner-config.js';
import { startExecutor } from '../executor/index.js';
import { startGateway } from '../../gateway/index.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { startRunnerServer } from '../../runner/server/runner-server.js';
import { runDev } from '../dev/dev-command.js';
import { runCommand } from './run-command.js';

const USAGE = `usage: ldbox <command>

  dev                 everything on one machine: nats-server, runner, executor and gateway (see README)
  runner              the sandbox runner (gRPC/Connect on LDBOX_RUNNER_PORT, default 50051)
  gateway             the webhook gateway and control plane (HTTP on LDBOX_GATEWAY_PORT, default 8080; needs NATS_URL)
  executor            runs queued workflows on the runners of LDBOX_RUNNER_URLS (health and metrics on LDBOX_EXECUTOR_PORT, default 8081)
  run FILE.js [...]   run integration code locally in the sandbox; see 'ldbox run --help'
`;

const stdout = (s: string) => void process.stdout.write(s);
const stderr = (s: string) => void process.stderr.write(s);

/** The CLI entry: returns the exit code (0 ok, 1 failure, 2 bad usage). */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'run':
        return await runCommand(rest, process.env, { stdout, stderr });
      case 'runner':
        return await serveRunner();
      case 'dev':
        return await runDev(process.env, { stdout, stderr }, untilSignal());
      case 'gateway':
        return await serveGateway();
      case 'executor':
        return await serveExecutor();
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        stdout(USAGE);
        return command === undefined ? 2 : 0;
      default:
        stderr(`unknown command "${command}"\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      stderr(`configuration error: ${err.message}\n`);
      return 2;
    }
    const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
    if (e?.code === 'EADDRINUSE' || e?.code === 'EACCES' || e?.code === 'EADDRNOTAVAIL') {
      const what = e.code === 'EADDRINUSE' ? 'is in use' : e.code === 'EACCES' ? 'needs privileges' : 'is not an address of this machine';
      stderr(`ldbox ${command}: cannot listen on ${e.address ?? '?'}:${e.port ?? '?'}: the address ${what} (${e.code}); set the role's LDBOX_*_PORT or _HOST\n`);
      return 1;
    }
    throw err;
  }
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

/** Runs one role until SIGINT/SIGTERM: start it, print where it listens, then close it. */
async function serve<C extends { host: string }>(
  role: string,
  config: C,
  start: (config: C, log: Logger) => Promise<{ port: number; close(): Promise<void> }>,
  describe: (url: string) => string,
): Promise<number> {
  const log = createLogger(role, process.env.LDBOX_LOG_LEVEL ?? 'info');
  const running = await start(config, log);
  stdout(`${role}: ${describe(`http://${config.host}:${running.port}`)}\n`);
  await untilSignal();
  log.info('shutting down');
  await running.close();
  return 0;
}

const serveGateway = () =>
  serve('gateway', loadGatewayConfig(process.env), startGateway, (url) => `${url} (webhooks under /api/hooks/workflows/, control plane, /healthz, /readyz, /metrics)`);

const serveExecutor = () => {
  const config = loadExecutorConfig(process.env);
  return serve('executor', config, startExecutor, (url) => `${url} (/healthz, /readyz, /metrics); runners ${config.runnerUrls.join(', ')}`);
};

const serveRunner = () => serve('runner', loadRunnerConfig(process.env), startRunnerServer, (url) => `${url} (gRPC, gRPC-Web, Connect; /healthz, /readyz, /metrics over HTTP/1.1 too)`);
