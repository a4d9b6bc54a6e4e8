import { readFile } from 'node:fs/promises';
import { loadRunnerConfig } from '../../runner/config/index.js';
import { ConfigError, type Env } from '../config/env-parsers.js';
import { createRunnerPool } from '../../runner/pool/index.js';
import { collectSecrets, type ResultKind, type SandboxOutcome } from '../../runner/sandbox/index.js';
import { parseArgs } from 'node:util';
import { isParseArgsError, usageMessage } from './usage-message.js';

class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const RUN_USAGE =
  'usage: ldbox run FILE.js [--input JSON] [--auth JSON] [--timeout-ms N] [--memory-mb N] [--kind generic|files|native-search|native-download]';

const KINDS: readonly ResultKind[] = ['generic', 'files', 'native-search', 'native-download'];

interface Out {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/**
 * `ldbox run FILE.js`: runs integration code locally in the same sandbox as the runner (same pool,
 * same limits), prints the result as JSON on stdout and the logs on stderr.
 * Exit codes: 0 ok, 1 the code failed, 2 bad usage.
 */
export async function runCommand(argv: readonly string[], env: Env, out: Out): Promise<number> {
  let args;
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: {
        input: { type: 'string' },
        auth: { type: 'string' },
        'timeout-ms': { type: 'string' },
        'memory-mb': { type: 'string' },
        kind: { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
    args = { positionals: parsed.positionals, flags: new Map(Object.entries(parsed.values).filter((e): e is [string, string] => typeof e[1] === 'string')) };
    if (args.positionals.length !== 1) throw new UsageError('give exactly one FILE.js');
  } catch (err) {
    out.stderr(`${isParseArgsError(err) ? usageMessage(err) : (err as Error).message}\n${RUN_USAGE}\n`);
    return 2;
  }
  const file = args.positionals[0]!;
  let config;
  let code: string;
  let input: unknown;
  let auth: unknown;
  let kind: ResultKind;
  let timeoutMs: number;
  let memoryBytes: number;
  try {
    // `run` listens on nothing: the runner's address and TLS settings do not apply to it.
    const listening = {
      LDBOX_RUNNER_HOST: undefined,
      LDBOX_RUNNER_TLS_CERT: undefined,
      LDBOX_RUNNER_TLS_KEY: undefined,
      LDBOX_RUNNER_TLS_CLIENT_CA: undefined,
    };
    config = loadRunnerConfig({ ...env, ...listening, LDBOX_POOL_SIZE: env.LDBOX_POOL_SIZE ?? '1' });
    code = await readFile(file, 'utf8').catch(() => {
      throw new UsageError(`cannot read ${file}`);
    });
    input = jsonObjectFlag(args.flags.get('input'), '--input');
    auth = jsonObjectFlag(args.flags.get('auth'), '--auth');
    kind = (args.flags.get('kind') ?? 'generic') as ResultKind;
    if (!KINDS.includes(kind)) throw new UsageError(`--kind must be one of ${KINDS.join(', ')}, got "${kind}"`);
    timeoutMs = intFlag(args.flags.get('timeout-ms'), '--timeout-ms', config.pool.defaultTimeoutMs, 1, config.pool.maxTimeoutMs);
    const mb = intFlag(args.flags.get('memory-mb'), '--memory-mb', config.pool.defaultMemoryBytes / 1048576, 4, config.pool.maxMemoryBytes / 1048576);
    memoryBytes = mb * 1048576;
  } catch (err) {
    if (err instanceof ConfigError) throw err; // the CLI prints it as any configuration error
    out.stderr(`${(err as Error).message}\n${RUN_USAGE}\n`);
    return 2;
  }

  const pool = createRunnerPool({ ...config.pool, size: 1, concurrentPerWorker: 1 });
  try {
    const { outcome } = await pool.execute({
      requestId: 'cli',
      code,
      dataJson: JSON.stringify({ input, auth }),
      secrets: collectSecrets(auth),
      resultKind: kind,
      timeoutMs,
      memoryBytes,
    });
    for (const l of outcome.logs) out.stderr(`${l.level === 'warn' ? '[warn] ' : ''}${l.message}\n`);
    if (outcome.error) {
      const e = outcome.error;
      out.stderr(`${e.name}: ${e.message}${e.stack ? `\n${e.stack}` : ''}\n(${e.kind})\n`);
      return 1;
    }
    out.stdout(`${JSON.stringify(printable(outcome), null, 2)}\n`);
    return 0;
  } finally {
    await pool.close(1000);
  }
}

function printable(outcome: SandboxOutcome): unknown {
  const result: unknown = JSON.parse(outcome.resultJson ?? 'null');
  if (outcome.download) {
    return { ...(result as object), base64: Buffer.from(outcome.download.content).toString('base64') };
  }
  return result;
}

function jsonObjectFlag(raw: string | undefined, name: string): Record<string, unknown> {
  if (raw === undefined) return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new UsageError(`${name} must be JSON, got ${raw.slice(0, 60)}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`${name} must be a JSON object`);
  return v as Record<string, unknown>;
}

function intFlag(raw: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  return n;
}
