/**
 * Bench-only: one real nats-server for bench/webhook.ts — JetStream on, file storage in a temp dir, a random
 * loopback port, and a `max_payload` big enough for the gateway's body limit. The same approach as
 * test/helpers/nats-server.ts (copied, not imported: benches do not depend on test/).
 *
 * The binary: `$NATS_SERVER_BIN`, else `nats-server` on PATH, else /usr/sbin, /usr/bin, /usr/local/bin
 * (run `bash scripts/ensure-nats-server.sh` once to install Debian's package).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { answersNatsInfo, anyFreePort } from '../../src/net/local-ports.js';

export interface BenchNatsServer {
  url: string;
  port: number;
  pid: number;
  /** CPU time (user + system) the server process used so far, in µs (Linux /proc; NaN elsewhere). */
  cpuMicros(): number;
  logs(): string;
  /** SIGTERM (SIGKILL after 5 s), wait, remove the temp dir. Idempotent. */
  stop(): Promise<void>;
}

function findBinary(): string {
  const env = process.env.NATS_SERVER_BIN;
  if (env && existsSync(env)) return env;
  try {
    const p = execFileSync('bash', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).trim();
    if (p) return p;
  } catch {
    /* not on PATH */
  }
  for (const p of ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server']) if (existsSync(p)) return p;
  throw new Error('no nats-server binary: run `bash scripts/ensure-nats-server.sh` or set NATS_SERVER_BIN');
}


/** Resolves once the port sends a NATS `INFO` line. */
async function waitForInfo(port: number, deadline: number, proc: ChildProcess, logs: () => string): Promise<void> {
  for (;;) {
    const ok = await answersNatsInfo(port);
    if (ok) return;
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`nats-server exited before listening on ${port}:\n${logs()}`);
    if (Date.now() > deadline) throw new Error(`nats-server did not answer on ${port} in time:\n${logs()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function waitExit(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((res) => p.once('exit', () => res()));
}

/** CPU of a process from /proc/<pid>/stat (utime + stime, clock ticks of 10 ms), in µs. */
export function procCpuMicros(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}

export interface StartBenchNatsOptions {
  /** Server `max_payload` in bytes. */
  maxPayload: number;
  /** Prefix the command (e.g. `['taskset', '-c', '0']`). */
  wrap?: string[];
}

export async function startBenchNats(opts: StartBenchNatsOptions): Promise<BenchNatsServer> {
  const bin = findBinary();
  const root = mkdtempSync(join(tmpdir(), 'ldbox-bench-nats-'));
  const storeDir = join(root, 'data');
  const configFile = join(root, 'nats.conf');
  writeFileSync(configFile, `max_payload: ${opts.maxPayload}\n`);
  let logBuf = '';
  const appendLog = (d: Buffer) => {
    logBuf = (logBuf + d.toString('utf8')).slice(-20_000);
  };
  let proc: ChildProcess | undefined;
  let port = 0;
  // A random port can be taken between anyFreePort() and the bind: retry with another one.
  for (let attempt = 0; ; attempt++) {
    port = await anyFreePort();
    const args = ['-c', configFile, '-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir];
    const [cmd, ...pre] = opts.wrap?.length ? [...opts.wrap, bin] : [bin];
    const p = spawn(cmd!, [...pre, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    proc = p;
    p.stdout?.on('data', appendLog);
    p.stderr?.on('data', appendLog);
    process.once('exit', () => p.kill('SIGKILL'));
    try {
      await waitForInfo(port, Date.now() + 10_000, p, () => logBuf);
      break;
    } catch (err) {
      p.kill('SIGKILL');
      await waitExit(p);
      if (attempt >= 2 || !/address already in use/i.test(logBuf)) {
        rmSync(root, { recursive: true, force: true });
        throw err;
      }
      logBuf = '';
    }
  }
  const p = proc!;
  let stopped = false;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    pid: p.pid!,
    cpuMicros: () => procCpuMicros(p.pid!),
    logs: () => logBuf,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (p.exitCode === null && p.signalCode === null) {
        p.kill('SIGTERM');
        const timer = setTimeout(() => p.kill('SIGKILL'), 5_000);
        await waitExit(p);
        clearTimeout(timer);
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
