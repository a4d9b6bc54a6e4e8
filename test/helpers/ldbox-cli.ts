/** Runs the real `bin/ldbox.js` in a child process until it exits by itself (killed after `timeoutMs`). */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../../bin/ldbox.js', import.meta.url));

export interface CliResult {
  /** The exit code; null when the process had to be killed (it did not exit by itself). */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The caller's environment without stray ldbox settings, plus `env`. A runner started this way skips its
 * warm-up (10,000 calls, ~1 s of both cores at every start and restart) unless `env` asks for one: the
 * warm-up has tests of its own (test/runner/warm-up.test.ts, and the quickstart runs the defaults).
 */
export function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LDBOX_') && !k.startsWith('NATS_')));
  return { ...base, LDBOX_RUNNER_WARMUP_CALLS: '0', ...env };
}

export function ldbox(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { env: cleanEnv(env), timeout: timeoutMs, killSignal: 'SIGKILL' }, (_err, stdout, stderr) => {
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr });
    });
  });
}
