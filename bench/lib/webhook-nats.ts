/**
 * Bench-only: one real nats-server for bench/webhook.ts — JetStream on, file storage in a temp dir, a port
 * the server picks, and a `max_payload` big enough for the gateway's body limit. Started by the shared
 * launcher (src/nats/nats-server-process.ts), which finds the binary with `scripts/ensure-nats-server.sh`
 * (`$NATS_SERVER_BIN`, PATH, the usual locations).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServerProcess } from '../../src/nats/nats-server-process.js';

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
  const root = mkdtempSync(join(tmpdir(), 'ldbox-bench-nats-'));
  let server;
  try {
    server = await startNatsServerProcess({ dir: root, storeDir: join(root, 'data'), config: { maxPayload: opts.maxPayload }, wrap: opts.wrap });
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  let stopped = false;
  return {
    url: server.url,
    port: server.port,
    pid: server.pid,
    cpuMicros: () => procCpuMicros(server.pid),
    logs: () => server.logs(),
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
