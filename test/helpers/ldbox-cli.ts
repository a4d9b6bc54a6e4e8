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

/** The caller's environment without stray ldbox settings, plus `env`. */
export function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LDBOX_') && !k.startsWith('NATS_')));
  return { ...base, ...env };
}

export function ldbox(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { env: cleanEnv(env), timeout: timeoutMs, killSignal: 'SIGKILL' }, (_err, stdout, stderr) => {
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr });
    });
  });
}
