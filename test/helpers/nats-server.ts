/**
 * A real nats-server for a test (JetStream on, file storage in a temp dir, a port the server picks),
 * started by the shared launcher (src/nats/nats-server-process.ts).
 *
 * `restart()` keeps the port and the data dir, which is what "NATS went away mid-test, then came back"
 * needs; `kill('SIGKILL')` then `restart()` is a process crash. Every started process is killed at the
 * latest when the test process exits, and `stop()` removes the temp dir.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type NatsServerProcess, startNatsServerProcess } from '../../src/nats/nats-server-process.js';
import { anyFreePort } from '../../src/net/local-ports.js';

export interface NatsServerOptions {
  /** Port to listen on; default: one the server picks. */
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

/** A free TCP port on 127.0.0.1 (for tests that need a port nothing listens on). */
export const freePort = anyFreePort;

export async function startNatsServer(opts: NatsServerOptions = {}): Promise<TestNatsServer> {
  const root = mkdtempSync(join(tmpdir(), 'ldbox-nats-'));
  const storeDir = join(root, 'data');
  const start = (port: number | undefined) =>
    startNatsServerProcess({
      dir: root,
      storeDir,
      port,
      config: opts.maxPayload === undefined ? undefined : { maxPayload: opts.maxPayload },
      args: opts.args,
      startTimeoutMs: opts.startTimeoutMs,
    });
  let proc: NatsServerProcess;
  try {
    proc = await start(opts.port);
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  // Fixed from the first start on: clients reconnect to the same address after a restart.
  const port = proc.port;
  let stopped = false;

  return {
    url: proc.url,
    port,
    storeDir,
    get pid() {
      return proc.pid;
    },
    get running() {
      return proc.running;
    },
    logs: () => proc.logs(),
    kill: (signal) => proc.kill(signal),
    async restart() {
      if (stopped) throw new Error('nats-server was stopped');
      await proc.stop();
      proc = await start(port);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await proc.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
