/**
 * Starts a real nats-server (JetStream on, file storage in a temp dir) on a random loopback port.
 *
 * The binary is found (and, as root with apt-get, installed from Debian's `nats-server` package) by
 * `scripts/ensure-nats-server.sh`, so a fresh CI machine needs no extra step. `restart()` keeps the
 * port and the data dir, which is what "NATS went away mid-test, then came back" needs; `kill('SIGKILL')`
 * then `restart()` is a process crash. Every started process is killed at the latest when the test
 * process exits, and `stop()` removes the temp dir.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { answersNatsInfo, anyFreePort } from '../../src/net/local-ports.js';

export interface NatsServerOptions {
  /** Port to listen on; default: a free random port. */
  port?: number;
  /** Server `max_payload` in bytes (default: the server's 1 MB). Written to a generated config file. */
  maxPayload?: number;
  /** Extra command-line arguments. */
  args?: string[];
  /** How long to wait for the port to answer (default 10 s). */
  startTimeoutMs?: number;
}

export interface TestNatsServer {
  url: string;
  port: number;
  storeDir: string;
  /** Current process id (changes on restart). */
  readonly pid: number | undefined;
  /** True while the process runs. */
  readonly running: boolean;
  /** The server's recent stderr/stdout (for failure messages). */
  logs(): string;
  /** SIGTERM (then SIGKILL after 5 s), wait for exit, remove the data dir. Idempotent. */
  stop(): Promise<void>;
  /** Send a signal and wait for the process to exit (data dir kept). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stop if running (SIGTERM), then start again on the same port with the same data dir. */
  restart(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const p of live) {
      try {
        p.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
  });
}

let binary: string | undefined;
/** Path of the nats-server binary, from `$NATS_SERVER_BIN` or `scripts/ensure-nats-server.sh`. */
export function natsServerBinary(): string {
  if (binary) return binary;
  const here = dirname(fileURLToPath(import.meta.url));
  // src: test/helpers, compiled: dist/test/helpers. Find the repo root by walking up to scripts/.
  const candidates = [resolve(here, '../..'), resolve(here, '../../..')];
  let lastErr: unknown;
  for (const root of candidates) {
    const script = join(root, 'scripts', 'ensure-nats-server.sh');
    try {
      binary = execFileSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 }).trim();
      if (binary) return binary;
    } catch (err) {
      lastErr = err;
    }
  }
  const stderr = (lastErr as { stderr?: string } | undefined)?.stderr ?? String(lastErr);
  throw new Error(`no nats-server binary: ${stderr.trim()}`);
}

/** A free TCP port on 127.0.0.1. */
export const freePort = anyFreePort;

/** Resolves once something on the port sends a NATS `INFO` line. */
async function waitForInfo(port: number, deadline: number, proc: () => ChildProcess | undefined, logs: () => string): Promise<void> {
  for (;;) {
    const ok = await answersNatsInfo(port);
    if (ok) return;
    const p = proc();
    if (!p || p.exitCode !== null || p.signalCode !== null) {
      throw new Error(`nats-server exited before listening on ${port}:\n${logs()}`);
    }
    if (Date.now() > deadline) throw new Error(`nats-server did not answer on ${port} in time:\n${logs()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function waitExit(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((res) => p.once('exit', () => res()));
}

export async function startNatsServer(opts: NatsServerOptions = {}): Promise<TestNatsServer> {
  installExitHook();
  const bin = natsServerBinary();
  const root = mkdtempSync(join(tmpdir(), 'ldbox-nats-'));
  const storeDir = join(root, 'data');
  const fixedPort = opts.port;
  let port = fixedPort ?? (await freePort());
  let proc: ChildProcess | undefined;
  let logBuf = '';
  let stopped = false;
  const appendLog = (d: Buffer) => {
    logBuf = (logBuf + d.toString('utf8')).slice(-20_000);
  };

  let configFile: string | undefined;
  if (opts.maxPayload !== undefined) {
    configFile = join(root, 'nats.conf');
    writeFileSync(configFile, `max_payload: ${opts.maxPayload}\n`);
  }

  const spawnOnce = async (): Promise<void> => {
    const args = ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir];
    if (configFile) args.unshift('-c', configFile);
    args.push(...(opts.args ?? []));
    const p = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    proc = p;
    live.add(p);
    p.stdout?.on('data', appendLog);
    p.stderr?.on('data', appendLog);
    p.once('exit', () => live.delete(p));
    await waitForInfo(port, Date.now() + (opts.startTimeoutMs ?? 10_000), () => proc, () => logBuf);
  };

  // A random port can be taken between freePort() and the server's bind: retry with another one.
  for (let attempt = 0; ; attempt++) {
    try {
      await spawnOnce();
      break;
    } catch (err) {
      if (proc) {
        proc.kill('SIGKILL');
        await waitExit(proc);
      }
      if (fixedPort !== undefined || attempt >= 2 || !/address already in use/i.test(logBuf)) {
        rmSync(root, { recursive: true, force: true });
        throw err;
      }
      logBuf = '';
      port = await freePort();
    }
  }

  const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const p = proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.kill(signal);
    const timer = setTimeout(() => p.kill('SIGKILL'), 5_000);
    await waitExit(p);
    clearTimeout(timer);
  };

  const server: TestNatsServer = {
    get url() {
      return `nats://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    storeDir,
    get pid() {
      return proc?.pid;
    },
    get running() {
      return !!proc && proc.exitCode === null && proc.signalCode === null;
    },
    logs: () => logBuf,
    kill,
    async restart() {
      if (stopped) throw new Error('nats-server was stopped');
      await kill('SIGTERM');
      await spawnOnce();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill('SIGTERM');
      rmSync(root, { recursive: true, force: true });
    },
  };
  return server;
}
