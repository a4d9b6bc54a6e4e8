/**
 * One nats-server child process with JetStream on, on loopback: the one launcher behind `ldbox dev`
 * (src/dev/local-nats.ts), the tests (test/helpers/nats-server.ts) and the benches
 * (bench/lib/webhook-nats.ts). Each caller adds only what is its own: dev its credentials, log file and
 * pid file; tests `restart()`; benches CPU pinning.
 *
 * The port: by default `-p -1`, so the server picks a free one and writes it to its ports file
 * (`--ports_file_dir <dir>`: `<dir>/nats-server_<pid>.ports`, `{"nats":["nats://127.0.0.1:<port>"]}`),
 * which is read back. Unlike choosing a free port first, nothing can take the port between the choice
 * and the bind, so there is no "address already in use" to retry (the nats.js test launcher does the
 * same). Start-up is done when the port answers with NATS `INFO`.
 *
 * Stopping: `stop()` sends SIGTERM, then SIGKILL after a timeout, and resolves once the process has
 * exited; every server still running is SIGKILLed when this process exits, so none is left behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, createWriteStream, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { answersNatsInfo } from '../net/local-ports.js';
import { stopLeftoverNatsServer } from './leftover-nats-server.js';
import { findNatsServerBinary } from './nats-server-binary.js';

/** What goes into the generated config file (only what has no command-line flag). */
export interface NatsServerConfig {
  /** A first `#` line saying who wrote the file. */
  comment?: string;
  /** `max_payload` in bytes (the server's default is 1 MB). */
  maxPayload?: number;
  /** The only user the server lets in. */
  auth?: { user: string; password: string };
  /** `server_name` (unique in a cluster: JetStream clustering requires it). */
  serverName?: string;
  /**
   * A cluster node: its route port on 127.0.0.1 and the route ports of the others (routes to itself are
   * ignored by the server), under one cluster `name`. With `auth`, routes log in with the same user.
   */
  cluster?: { name: string; port: number; routes: number[]; auth?: { user: string; password: string } };
}

export interface NatsServerProcessOptions {
  /** Holds the generated config file and the ports file; created when missing. */
  dir: string;
  /** The JetStream store directory (`-sd`). */
  storeDir: string;
  /** The nats-server binary; default: {@link findNatsServerBinary}. */
  bin?: string;
  /** The client port on 127.0.0.1; default -1: the server picks a free one. */
  port?: number;
  /** Written to `<dir>/nats-server.conf` (mode 0600: it may hold a password) and passed with `-c`. */
  config?: NatsServerConfig;
  /** More arguments (e.g. `--user`, `--tls…`, `--cluster…`); they come last, so they win. */
  args?: string[];
  /** Runs the server under this command (e.g. `['taskset', '-c', '0']`); it must exec the server (same pid). */
  wrap?: string[];
  /** Its own process group: Ctrl-C in a terminal then does not reach it, and its owner stops it last. */
  detached?: boolean;
  /** The server's output is appended to this file as well as kept in memory ({@link NatsServerProcess.logs}). */
  logFile?: string;
  /**
   * The pid is written here and removed at exit; a server that a previous owner left running with the
   * same pid file and config is stopped first (see leftover-nats-server.ts).
   */
  pidFile?: string;
  /** How long start-up may take (default 10 s). */
  startTimeoutMs?: number;
}

export interface NatsServerProcess {
  /** The client port it listens on. */
  readonly port: number;
  /** `nats://127.0.0.1:<port>`, without credentials. */
  readonly url: string;
  readonly pid: number;
  /** The generated config file, when there is one. */
  readonly configFile: string | undefined;
  /** True until the process has exited. */
  readonly running: boolean;
  /** Resolves when the process exits, for whatever reason, with its exit code or signal. */
  readonly exited: Promise<string>;
  /** The last 20 000 characters of its output (for failure messages). */
  logs(): string;
  /** Sends `signal` (default SIGTERM), SIGKILL after `killAfterMs` (default 5 s); resolves once the process has exited. */
  kill(signal?: NodeJS.Signals, killAfterMs?: number): Promise<void>;
  /** SIGTERM, then SIGKILL after `timeoutMs` (default 5 s); resolves once the process has exited. */
  stop(timeoutMs?: number): Promise<void>;
}

const LOG_TAIL_CHARS = 20_000;

// Every server still running is killed when this process exits, however it exits.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function killAllOnExit(p: ChildProcess): void {
  live.add(p);
  p.once('exit', () => live.delete(p));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** Writes the config file, mode 0600 (it may hold a password). */
function writeConfig(file: string, config: NatsServerConfig): void {
  const lines = [
    ...(config.comment ? [`# ${config.comment}`] : []),
    ...(config.maxPayload !== undefined ? [`max_payload: ${config.maxPayload}`] : []),
    ...(config.auth ? [`authorization { user: ${JSON.stringify(config.auth.user)}, password: ${JSON.stringify(config.auth.password)} }`] : []),
    ...(config.serverName ? [`server_name: ${JSON.stringify(config.serverName)}`] : []),
    ...(config.cluster ? clusterBlock(config.cluster) : []),
    '',
  ];
  writeFileSync(file, lines.join('\n'), { mode: 0o600 });
  chmodSync(file, 0o600); // the mode above applies to a new file only
}

/** The `cluster { … }` block: loopback routes, authenticated when `auth` is given (a route port is a way in too). */
function clusterBlock(c: NonNullable<NatsServerConfig['cluster']>): string[] {
  const cred = c.auth ? `${encodeURIComponent(c.auth.user)}:${encodeURIComponent(c.auth.password)}@` : '';
  return [
    'cluster {',
    `  name: ${JSON.stringify(c.name)}`,
    `  listen: "127.0.0.1:${c.port}"`,
    ...(c.auth ? [`  authorization { user: ${JSON.stringify(c.auth.user)}, password: ${JSON.stringify(c.auth.password)} }`] : []),
    `  routes: [${c.routes.map((p) => JSON.stringify(`nats://${cred}127.0.0.1:${p}`)).join(', ')}]`,
    '}',
  ];
}

/** The ports file of process `pid` in `dir` (`<executable>_<pid>.ports`), when it is there. */
function portsFileName(dir: string, pid: number): string | undefined {
  try {
    return readdirSync(dir).find((f) => f.endsWith(`_${pid}.ports`));
  } catch {
    return undefined; // the dir is gone (its owner removed it)
  }
}

/** The port in the server's ports file, or undefined while it is not (fully) written. */
function readPortsFile(dir: string, pid: number): number | undefined {
  const name = portsFileName(dir, pid);
  if (!name) return undefined;
  try {
    const url = (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { nats?: string[] }).nats?.[0];
    const port = url ? Number(new URL(url).port) : Number.NaN;
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined; // written but not complete yet
  }
}

/** Starts nats-server and resolves once it answers on its port; rejects (the process gone) otherwise. */
export async function startNatsServerProcess(opts: NatsServerProcessOptions): Promise<NatsServerProcess> {
  const bin = opts.bin ?? (await findNatsServerBinary());
  mkdirSync(opts.dir, { recursive: true });
  mkdirSync(opts.storeDir, { recursive: true });
  const configFile = opts.config ? join(opts.dir, 'nats-server.conf') : undefined;
  if (configFile) writeConfig(configFile, opts.config!);
  if (opts.pidFile) await stopLeftoverNatsServer(opts.pidFile, configFile ?? opts.storeDir);

  const args = [
    ...(configFile ? ['-c', configFile] : []),
    ...['-js', '-a', '127.0.0.1', '-p', String(opts.port ?? -1), '-sd', opts.storeDir, '--ports_file_dir', opts.dir],
    ...(opts.args ?? []),
  ];
  const [cmd, ...pre] = opts.wrap?.length ? [...opts.wrap, bin] : [bin];
  const proc = spawn(cmd!, [...pre, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false });
  killAllOnExit(proc);
  let tail = '';
  let done = false;
  const exited = new Promise<string>((res) => {
    proc.once('exit', (code, signal) => res(signal ?? `exit code ${code}`));
    // A failed spawn (no such binary) is an 'error' that may come without an 'exit'.
    proc.once('error', (err) => res(`could not start: ${err.message}`));
  });
  const log = opts.logFile ? createWriteStream(opts.logFile, { flags: 'a' }) : undefined;
  for (const out of [proc.stdout!, proc.stderr!]) {
    out.on('data', (d: Buffer) => (tail = (tail + d.toString('utf8')).slice(-LOG_TAIL_CHARS)));
    if (log) out.pipe(log, { end: false });
  }
  if (opts.pidFile && proc.pid !== undefined) writeFileSync(opts.pidFile, `${proc.pid}\n`);
  void exited.then(() => {
    done = true;
    log?.end();
    if (opts.pidFile) rmSync(opts.pidFile, { force: true });
    // The server removes its ports file when it shuts down, but not when it is killed.
    const ports = proc.pid === undefined ? undefined : portsFileName(opts.dir, proc.pid);
    if (ports) rmSync(join(opts.dir, ports), { force: true });
  });

  const running = () => !done;
  const kill = async (signal: NodeJS.Signals = 'SIGTERM', killAfterMs = 5_000): Promise<void> => {
    if (done) return;
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
    await exited;
    clearTimeout(timer);
  };
  const seeLog = () => (opts.logFile ? `; see ${opts.logFile}` : '');

  const port = await waitUntilAnswering(opts, proc.pid, exited).catch(async (err: Error) => {
    await kill('SIGKILL');
    throw new Error(`${err.message}${seeLog()}:\n${tail}`);
  });

  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    pid: proc.pid!,
    configFile,
    get running() {
      return running();
    },
    exited,
    logs: () => tail,
    kill,
    stop: (timeoutMs = 5_000) => kill('SIGTERM', timeoutMs),
  };
}

/** Polls for the ports file, then for `INFO` on that port; rejects when the process exits or time is up. */
async function waitUntilAnswering(opts: NatsServerProcessOptions, pid: number | undefined, exited: Promise<string>): Promise<number> {
  let how: string | undefined;
  void exited.then((h) => (how = h));
  const timeoutMs = opts.startTimeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  let port: number | undefined;
  for (;;) {
    if (how !== undefined) throw new Error(`nats-server exited at start (${how})`);
    if (port === undefined && pid !== undefined) port = readPortsFile(opts.dir, pid);
    if (port !== undefined && (await answersNatsInfo(port))) return port;
    if (Date.now() > deadline) throw new Error(`nats-server did not answer${port ? ` on port ${port}` : ''} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
