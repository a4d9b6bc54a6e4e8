import { watch as watchFs } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadRunnerConfig } from '../../runner/config/index.js';
// Types only: the pool and the sandbox are imported once the arguments, the settings and the files have
// been read, so a usage or configuration error does not load them first (it answers in ~0.17 s, not ~0.33 s).
import type { RunnerPool } from '../../runner/pool/index.js';
import type { ResultKind, SandboxOutcome } from '../../runner/sandbox/index.js';
import { ConfigError, type Env } from '../config/env-parsers.js';
import { RUN_USAGE } from './command-usage.js';
import { isParseArgsError, usageMessage } from './usage-message.js';

class UsageError extends Error {
  override readonly name = 'UsageError';
}

const KINDS: readonly ResultKind[] = ['generic', 'files', 'native-search', 'native-download'];
/** How long `--watch` waits after a change for the editor to finish writing before it runs again. */
const WATCH_DEBOUNCE_MS = 150;

interface Out {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/** Where `run` reads the code from `-` and what stops `--watch` (the CLI passes stdin and SIGINT). */
export interface RunIo {
  stdin?: NodeJS.ReadableStream;
  untilStopped?: () => Promise<void>;
}

/** The call, read from the command line and the files it names; read again for each `--watch` run. */
interface Call {
  code: string;
  input: Record<string, unknown>;
  auth: Record<string, unknown>;
}

interface Options {
  source: string;
  inputFlag: string | undefined;
  authFlag: string | undefined;
  kind: ResultKind;
  timeoutMs: number;
  memoryBytes: number;
  outDir: string | undefined;
  watch: boolean;
}

/**
 * `ldbox run FILE.js`: runs integration code locally in the same sandbox as the runner (same pool,
 * same limits), prints the result as JSON on stdout and the logs on stderr.
 * Exit codes: 0 ok, 1 the code failed, 2 bad usage. With `--watch` it runs until stopped and returns
 * the exit code of the last run.
 */
export async function runCommand(argv: readonly string[], env: Env, out: Out, io: RunIo = {}): Promise<number> {
  let flags: Map<string, string | boolean>;
  let positionals: string[];
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: {
        input: { type: 'string' },
        auth: { type: 'string' },
        'timeout-ms': { type: 'string' },
        'memory-mb': { type: 'string' },
        kind: { type: 'string' },
        out: { type: 'string' },
        watch: { type: 'boolean' },
      },
      allowPositionals: true,
      strict: true,
    });
    positionals = parsed.positionals;
    flags = new Map(Object.entries(parsed.values).filter((e): e is [string, string | boolean] => e[1] !== undefined));
    if (positionals.length !== 1) throw new UsageError('give exactly one FILE.js (or - to read the code from stdin)');
  } catch (err) {
    out.stderr(`${isParseArgsError(err) ? usageMessage(err) : (err as Error).message}\n${RUN_USAGE}\n`);
    return 2;
  }
  const str = (name: string) => flags.get(name) as string | undefined;
  let config;
  let options: Options;
  let call: Call;
  try {
    // `run` listens on nothing: the runner's address and TLS settings do not apply to it.
    const listening = {
      LDBOX_RUNNER_HOST: undefined,
      LDBOX_RUNNER_TLS_CERT: undefined,
      LDBOX_RUNNER_TLS_KEY: undefined,
      LDBOX_RUNNER_TLS_CLIENT_CA: undefined,
    };
    // One worker, and its nice step off unless set: the step keeps a runner's main thread, which hands out
    // the requests, on its core, but `run` makes one call at a time and its main thread only waits. Niced,
    // the worker got a few % of a busy machine's CPU: its start took seconds, and a timed-out loop could be
    // stopped with the "stuck in a built-in" message instead of the plain time limit.
    config = loadRunnerConfig({ ...env, ...listening, LDBOX_POOL_SIZE: env.LDBOX_POOL_SIZE ?? '1', LDBOX_WORKER_NICE: env.LDBOX_WORKER_NICE ?? '0' });
    const kind = (str('kind') ?? 'generic') as ResultKind;
    if (!KINDS.includes(kind)) throw new UsageError(`--kind must be one of ${KINDS.join(', ')}, got "${kind}"`);
    const timeoutMs = intFlag(str('timeout-ms'), '--timeout-ms', config.pool.defaultTimeoutMs, 1, config.pool.maxTimeoutMs);
    const mb = intFlag(str('memory-mb'), '--memory-mb', config.pool.defaultMemoryBytes / 1048576, 4, config.pool.maxMemoryBytes / 1048576);
    const outDir = str('out');
    if (outDir === '') throw new UsageError('--out needs a directory');
    const watch = flags.get('watch') === true;
    const source = positionals[0]!;
    if (watch && source === '-') throw new UsageError('--watch needs a FILE.js to watch, not - (stdin)');
    options = { source, inputFlag: str('input'), authFlag: str('auth'), kind, timeoutMs, memoryBytes: mb * 1048576, outDir, watch };
    call = await readCall(options, io);
  } catch (err) {
    if (err instanceof ConfigError) throw err; // the CLI prints it as any configuration error
    out.stderr(`${(err as Error).message}\n${RUN_USAGE}\n`);
    return 2;
  }

  const { createRunnerPool } = await import('../../runner/pool/index.js');
  const pool = createRunnerPool({ ...config.pool, size: 1, concurrentPerWorker: 1 });
  try {
    let code = await runOnce(pool, call, options, out);
    if (!options.watch) return code;
    code = await watchAndRun(options, io, out, async () => {
      let next: Call;
      try {
        next = await readCall(options, io);
      } catch (err) {
        out.stderr(`${(err as Error).message}\n`);
        return 2;
      }
      return runOnce(pool, next, options, out);
    });
    return code;
  } finally {
    await pool.close(1000);
  }
}

async function readCall(options: Options, io: RunIo): Promise<Call> {
  const code = options.source === '-' ? await readStdin(io.stdin) : await readText(options.source, 'FILE.js');
  return {
    code,
    input: await jsonObjectFlag(options.inputFlag, '--input'),
    auth: await jsonObjectFlag(options.authFlag, '--auth'),
  };
}

/** One run: logs on stderr, the result (or, with --out, what was written) on stdout. */
async function runOnce(pool: RunnerPool, call: Call, options: Options, out: Out): Promise<number> {
  const { collectSecrets } = await import('../../runner/sandbox/index.js');
  const { outcome } = await pool.execute({
    requestId: 'cli',
    code: call.code,
    dataJson: JSON.stringify({ input: call.input, auth: call.auth }),
    secrets: collectSecrets(call.auth),
    resultKind: options.kind,
    timeoutMs: options.timeoutMs,
    memoryBytes: options.memoryBytes,
  });
  for (const l of outcome.logs) out.stderr(`${l.level === 'warn' ? '[warn] ' : ''}${l.message}\n`);
  if (outcome.error) {
    const e = outcome.error;
    out.stderr(`${e.name}: ${e.message}${e.stack ? `\n${e.stack}` : ''}\n(${e.kind})\n`);
    return 1;
  }
  if (options.outDir !== undefined && (outcome.files || outcome.download)) {
    let written: { fileName: string; mimeType: string; path: string; bytes: number }[];
    try {
      written = await writeResultFiles(options.outDir, outcome);
    } catch (err) {
      out.stderr(`cannot write into --out ${options.outDir}: ${(err as Error).message}\n`);
      return 2;
    }
    for (const w of written) out.stderr(`wrote ${w.path} (${w.bytes} bytes)\n`);
    out.stdout(`${JSON.stringify(outcome.download ? written[0] : { files: written }, null, 2)}\n`);
    return 0;
  }
  if (options.outDir !== undefined) out.stderr(`[warn] --out: a ${options.kind} result has no files to write\n`);
  out.stdout(`${JSON.stringify(printable(outcome), null, 2)}\n`);
  return 0;
}

/**
 * Runs `again` after every change of the watched files, debounced, until stopped. The directories are
 * watched rather than the files: editors often save by writing a new file and renaming it over the old.
 */
async function watchAndRun(options: Options, io: RunIo, out: Out, again: () => Promise<number>): Promise<number> {
  const files = [options.source, options.inputFlag, options.authFlag]
    .filter((f): f is string => f !== undefined && (f === options.source || f.startsWith('@')))
    .map((f) => resolve(f === options.source ? f : f.slice(1)));
  const byDir = new Map<string, Set<string>>();
  for (const f of files) {
    const names = byDir.get(dirname(f)) ?? new Set<string>();
    names.add(basename(f));
    byDir.set(dirname(f), names);
  }
  let last = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let changedWhileRunning = false;
  let busy = false;
  const run = () => {
    if (busy) {
      changedWhileRunning = true;
      return;
    }
    busy = true;
    running = (async () => {
      do {
        changedWhileRunning = false;
        out.stderr(`--- ${basename(options.source)} changed: running again ---\n`);
        last = await again();
      } while (changedWhileRunning);
      busy = false;
    })();
  };
  const watchers = [...byDir].map(([dir, names]) =>
    watchFs(dir, (_event, name) => {
      if (name !== null && !names.has(String(name))) return;
      clearTimeout(timer);
      timer = setTimeout(run, WATCH_DEBOUNCE_MS);
    }),
  );
  out.stderr(`watching ${files.join(', ')} (Ctrl-C stops)\n`);
  try {
    await (io.untilStopped ?? (() => new Promise<void>(() => {})))();
  } finally {
    clearTimeout(timer);
    for (const w of watchers) w.close();
  }
  await running;
  return last;
}

/**
 * Writes the files of a result into `dir`. A name is reduced to a plain file name (no directory, no
 * `..`, no control characters), and an existing file is never overwritten: the name gets " (1)", " (2)", …
 */
async function writeResultFiles(dir: string, outcome: SandboxOutcome): Promise<{ fileName: string; mimeType: string; path: string; bytes: number }[]> {
  await mkdir(dir, { recursive: true });
  const items = outcome.download ? [outcome.download] : (outcome.files ?? []);
  const written = [];
  for (const item of items) {
    const path = await writeExclusive(dir, safeFileName(item.fileName), item.content);
    written.push({ fileName: item.fileName, mimeType: item.mimeType, path, bytes: item.content.byteLength });
  }
  return written;
}

/** A file name that stays inside the output directory: the last path segment, without control or reserved characters. */
export function safeFileName(name: string): string {
  const last = name.split(/[/\\]/).pop() ?? '';
  let cleaned = '';
  for (const ch of last) cleaned += ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f || '<>:"|?*'.includes(ch) ? '_' : ch;
  cleaned = cleaned.replace(/^[.\s]+/, '').trim();
  return cleaned === '' ? 'download' : cleaned.slice(0, 200);
}

async function writeExclusive(dir: string, name: string, content: Uint8Array): Promise<string> {
  const ext = extname(name);
  const stem = name.slice(0, name.length - ext.length);
  for (let i = 0; ; i++) {
    const path = join(dir, i === 0 ? name : `${stem} (${i})${ext}`);
    try {
      await writeFile(path, content, { flag: 'wx' });
      return path;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || i >= 10_000) throw err;
    }
  }
}

function printable(outcome: SandboxOutcome): unknown {
  const result: unknown = JSON.parse(outcome.resultJson ?? 'null');
  if (outcome.download) {
    return { ...(result as object), base64: Buffer.from(outcome.download.content).toString('base64') };
  }
  return result;
}

async function readStdin(stdin: NodeJS.ReadableStream | undefined): Promise<string> {
  if (!stdin) throw new UsageError('no stdin to read the code from');
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? (err as Error).message);
    throw new UsageError(`cannot read ${what} ${path}: ${why}`);
  }
}

/** `--input '{"a":1}'` or `--input @file.json`: a JSON object; a parse error names the file, line and column. */
async function jsonObjectFlag(raw: string | undefined, name: string): Promise<Record<string, unknown>> {
  if (raw === undefined) return {};
  const fromFile = raw.startsWith('@');
  const where = fromFile ? `${name} ${raw}` : name;
  const text = fromFile ? await readText(raw.slice(1), `${name} file`) : raw;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${where}: bad JSON ${jsonErrorPosition(text, (err as Error).message)}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new UsageError(`${where} must be a JSON object, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
  }
  return v as Record<string, unknown>;
}

/** "at line 3, column 7 (Unexpected token…)" for a JSON.parse error of `text`. */
export function jsonErrorPosition(text: string, message: string): string {
  const reason = message.replace(/ in JSON at position \d+.*$/s, '').replace(/, ".*$/s, '');
  const at = /at position (\d+)/.exec(message);
  const pos = at ? Number(at[1]) : /Unexpected end of JSON input/.test(message) ? text.length : firstBadOffset(text);
  const before = text.slice(0, pos);
  const line = before.split('\n').length;
  const column = pos - before.lastIndexOf('\n');
  return `at line ${line}, column ${column} (${reason})`;
}

/**
 * Where JSON text goes wrong when V8's message does not say ("Unexpected token 'x', "…" is not valid
 * JSON"): the shortest prefix that fails for another reason than its end. A prefix that fails stays
 * failed when it grows, so a binary search finds it.
 */
function firstBadOffset(text: string): number {
  const bad = (n: number) => {
    try {
      JSON.parse(text.slice(0, n));
      return false;
    } catch (err) {
      return !/Unexpected end of JSON input/.test((err as Error).message);
    }
  };
  let lo = 1;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (bad(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo - 1;
}

function intFlag(raw: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  return n;
}
