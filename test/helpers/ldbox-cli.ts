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

/**
 * The file and arguments that run `command args…` in a child process without the test runner's loader.
 * tap adds its processinfo loader (`--import …/@tapjs/processinfo/…`, which records the files each process
 * loads, for coverage and `tap --changed`) to NODE_OPTIONS of every process a test starts, and adds it back
 * even when the child's env leaves NODE_OPTIONS out: it wraps child_process itself. With coverage off
 * (package.json) it only costs time, a module-load hook thread and a second read of every module: a start
 * of bin/ldbox.js that answers a usage or configuration error took ~1.0 s with it and ~0.35 s without. So
 * the child is started through `env`, which sets NODE_OPTIONS back to the caller's own options, without
 * tap's, before node (or npm) starts; nothing else about the child changes (`env` execs it: same pid,
 * signals and exit code).
 */
export function withoutTapLoader(command: string, args: readonly string[]): [file: string, args: string[]] {
  const own = (process.env.NODE_OPTIONS ?? '')
    .replace(/(?:^|\s)"?--(?:import|loader|experimental-loader)[= ]"?[^\s"]*@tapjs\/processinfo[^\s"]*"?/g, '')
    .trim();
  return ['env', [...(own === '' ? ['-u', 'NODE_OPTIONS'] : [`NODE_OPTIONS=${own}`]), command, ...args]];
}

/** `node args…` as withoutTapLoader starts it. */
export function nodeChild(args: readonly string[]): [file: string, args: string[]] {
  return withoutTapLoader(process.execPath, args);
}

export function ldbox(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(...nodeChild([BIN, ...args]), { env: cleanEnv(env), timeout: timeoutMs, killSignal: 'SIGKILL' }, (_err, stdout, stderr) => {
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr });
    });
  });
}

/**
 * `fn` on each of `items`, at most `limit` at a time; the results in the order of `items`, so a test
 * asserts them in the same order as when it ran them one after another. For CLI calls that depend on
 * nothing but their own arguments: each is a node start, mostly CPU, and a few at once keep both cores
 * busy while one of them waits on process creation or the file system.
 */
export async function inParallel<T, R>(items: readonly T[], fn: (item: T) => Promise<R>, limit = 4): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
