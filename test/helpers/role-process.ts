/**
 * One ldbox role (`bin/ldbox.js gateway|executor|runner`) as its own process, as an operator runs it: the
 * port it bound is read from its `<role>: http://host:port …` line, and `restart()` starts it again on that
 * same port (executors name runners by URL, the load goes to fixed gateway URLs). `kill('SIGKILL')` then
 * `restart()` is a crash. Every process still running is SIGKILLed when the test process exits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cleanEnv, BIN, nodeChild } from './ldbox-cli.js';

export type Role = 'gateway' | 'executor' | 'runner';

export interface RoleProcess {
  readonly role: Role;
  /** The bound port (the same across restarts). */
  readonly port: number;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly running: boolean;
  /** The last 50 000 characters of its output, across restarts. */
  output(): string;
  /** Sends `signal` (default SIGTERM) and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port, with the same environment. */
  restart(): Promise<void>;
  /** True when `/readyz` answers 200. */
  ready(): Promise<boolean>;
}

const PORT_SETTING: Record<Role, string> = { gateway: 'LDBOX_GATEWAY_PORT', executor: 'LDBOX_EXECUTOR_PORT', runner: 'LDBOX_RUNNER_PORT' };

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** Starts `ldbox <role>` with `env` (on a port it picks unless `env` names one) and resolves once it printed where it listens. */
export async function startRole(role: Role, env: Record<string, string>, startTimeoutMs = 30_000): Promise<RoleProcess> {
  let out = '';
  let proc: ChildProcess;
  let exited: Promise<void>;

  const start = async (port: string): Promise<number> => {
    proc = spawn(...nodeChild([BIN, role]), {
      env: cleanEnv({ LDBOX_LOG_LEVEL: 'warn', ...env, [PORT_SETTING[role]]: port }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const p = proc;
    live.add(p);
    exited = new Promise<void>((r) =>
      p.once('exit', (code, signal) => {
        live.delete(p);
        out += `\n--- ${role} exited (${signal ?? `code ${code}`}) ---\n`;
        r();
      }),
    );
    const append = (d: Buffer) => (out = (out + d.toString('utf8')).slice(-50_000));
    p.stdout!.on('data', append);
    p.stderr!.on('data', append);
    const line = new RegExp(`^${role}: https?://[^\\s:]+:(\\d+) `, 'm');
    const deadline = Date.now() + startTimeoutMs;
    for (;;) {
      const m = line.exec(out);
      if (m) return Number(m[1]);
      if (p.exitCode !== null || p.signalCode !== null) throw new Error(`ldbox ${role} exited at start:\n${out}`);
      if (Date.now() > deadline) throw new Error(`ldbox ${role} did not print where it listens within ${startTimeoutMs} ms:\n${out}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const port = await start(env[PORT_SETTING[role]] ?? '0');
  const url = `http://127.0.0.1:${port}`;
  const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    await exited;
  };
  return {
    role,
    port,
    url,
    get running() {
      return proc.exitCode === null && proc.signalCode === null;
    },
    output: () => out,
    kill,
    async restart() {
      await kill();
      out += `\n--- ${role} restarted ---\n`;
      await start(String(port));
    },
    async ready() {
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        return res.status === 200;
      } catch {
        return false;
      }
    },
  };
}
