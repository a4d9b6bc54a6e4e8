/**
 * The nats-server that `ldbox dev` runs for one machine: JetStream on, file storage under the data dir,
 * loopback only, `max_payload: 8MB` so that the gateway's default 5 MiB body limit fits (the server's
 * default 1 MB would not), its log in `<dir>/nats-server.log`. It takes only clients that log in with the
 * user and password it is given (`ldbox dev` keeps a generated one): even on loopback, another local user
 * or a browser-borne request must not get an open NATS. The config file holds the password: mode 0600.
 *
 * The binary comes from `scripts/ensure-nats-server.sh` (PATH, the usual locations, $NATS_SERVER_BIN;
 * installed from Debian's `nats-server` package when missing and we are root with apt-get; otherwise it
 * fails with a one-line hint, which is passed on as the error message).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NatsSettings } from '../nats/connection-options.js';
import { answersNatsInfo } from '../net/local-ports.js';

/** The one user of the local nats-server. */
export interface LocalNatsUser {
  user: string;
  password: string;
}

export interface LocalNats {
  /** `nats://127.0.0.1:<port>`, without credentials. */
  url: string;
  port: number;
  /** How the roles connect to it: the URL and the user and password. */
  settings: NatsSettings;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves once the process is gone. */
  stop(timeoutMs?: number): Promise<void>;
  /** Resolves when the process exits (for whatever reason) with its exit code or signal. */
  readonly exited: Promise<string>;
}

/** The repo's `scripts/ensure-nats-server.sh`, found from this file (src/dev or dist/src/dev). */
function ensureScript(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['../..', '../../..']) {
    const p = join(resolve(here, up), 'scripts', 'ensure-nats-server.sh');
    if (existsSync(p)) return p;
  }
  throw new Error('scripts/ensure-nats-server.sh not found next to the ldbox package');
}

/** The nats-server binary's path, installing it when permitted; rejects with the script's hint otherwise. */
export function findNatsServer(): Promise<string> {
  return new Promise((resolvePath, reject) => {
    execFile('bash', [ensureScript()], { timeout: 600_000 }, (err, stdout, stderr) => {
      const path = stdout.trim();
      if (err || path === '') reject(new Error(stderr.trim() || (err as Error)?.message || 'nats-server not found'));
      else resolvePath(path);
    });
  });
}

/**
 * Starts nats-server on 127.0.0.1:`port` with its data in `dir`, taking only `auth`'s user; resolves once
 * it answers.
 */
export async function startLocalNats(bin: string, dir: string, port: number, auth: LocalNatsUser, maxPayloadBytes = 8 * 1024 * 1024): Promise<LocalNats> {
  mkdirSync(join(dir, 'jetstream'), { recursive: true });
  const conf = join(dir, 'nats-server.conf');
  writeFileSync(
    conf,
    [
      '# Written by `ldbox dev` on every start; edit LDBOX_* settings instead.',
      `listen: "127.0.0.1:${port}"`,
      `max_payload: ${maxPayloadBytes}`,
      `jetstream { store_dir: ${JSON.stringify(join(dir, 'jetstream'))} }`,
      `authorization { user: ${JSON.stringify(auth.user)}, password: ${JSON.stringify(auth.password)} }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  chmodSync(conf, 0o600); // mode above applies to a new file only
  const pidFile = join(dir, 'nats-server.pid');
  await stopOrphan(pidFile, conf);
  const log = createWriteStream(join(dir, 'nats-server.log'), { flags: 'a' });
  // Its own process group: Ctrl-C in a terminal signals the whole foreground group, and nats-server must
  // stop last, after the roles that use it, not at the same time. The pid file lets the next start stop
  // a server left behind by a `kill -9` of this process.
  const proc: ChildProcess = spawn(bin, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  writeFileSync(pidFile, `${proc.pid}\n`);
  const killOnExit = () => proc.kill('SIGKILL');
  process.once('exit', killOnExit);
  proc.stdout!.pipe(log, { end: false });
  proc.stderr!.pipe(log, { end: false });
  const exited = new Promise<string>((res) => proc.once('exit', (code, signal) => res(signal ?? `exit code ${code}`)));
  void exited.then(() => {
    log.end();
    process.off('exit', killOnExit);
    rmSync(pidFile, { force: true });
  });
  const deadline = Date.now() + 15_000;
  while (!(await answersNatsInfo(port))) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`nats-server exited at start (${await exited}); see ${join(dir, 'nats-server.log')}`);
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`nats-server did not answer on port ${port} within 15 s; see ${join(dir, 'nats-server.log')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = `nats://127.0.0.1:${port}`;
  return {
    url,
    port,
    settings: { servers: [`127.0.0.1:${port}`], shown: url, user: auth.user, pass: auth.password },
    exited,
    async stop(timeoutMs = 5000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Stops the nats-server of a previous run that was not stopped (its pid file is there and it runs our config). */
async function stopOrphan(pidFile: string, conf: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    /* not running (or no /proc) */
  }
  if (Number.isSafeInteger(pid) && pid > 1 && cmdline.includes('nats-server') && cmdline.includes(conf)) {
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 50));
  }
  rmSync(pidFile, { force: true });
}
