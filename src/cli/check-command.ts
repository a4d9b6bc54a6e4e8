import { readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { RUNNER_SETTINGS } from '../../runner/config/index.js';
import { CHECK_KINDS, type CheckKind, type CodeFile, createIntegrationChecker } from '../check/integration-checker.js';
import { loadTypeScript, TypeScriptMissingError } from '../check/load-typescript.js';
import { type Env, formatSize, type SizeSpec, sizeSetting } from '../config/env-parsers.js';
import { isParseArgsError, usageMessage } from './usage-message.js';
import { CHECK_USAGE } from './command-usage.js';

class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The sandbox's globals, shipped with the package (package.json `files`, export `ldbox/types`). */
const DECLARATIONS = fileURLToPath(new URL('../../../types/ld.d.ts', import.meta.url));

/** The runner's limit on code size (LDBOX_MAX_CODE_BYTES): code the runner would refuse is not worth checking. */
export const MAX_CODE_SPEC = RUNNER_SETTINGS.find((s) => s.name === 'LDBOX_MAX_CODE_BYTES') as SizeSpec;

interface Out {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/**
 * `ldbox check FILE.js … [--kind K]`: the problems on stdout, one `file:line:col message` each, and a
 * count on stderr. Exit codes: 0 clean, 1 problems, 2 bad usage (a file that cannot be read, is too
 * large or is not text; an unknown kind; TypeScript not installed). Test: test/cli/ldbox-check.test.ts.
 */
export async function checkCommand(argv: readonly string[], env: Env, out: Out): Promise<number> {
  let kind: CheckKind;
  let files: CodeFile[];
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options: { kind: { type: 'string' } }, allowPositionals: true, strict: true });
    if (positionals.length === 0) throw new UsageError('give one or more FILE.js to check');
    const k = values.kind ?? 'generic';
    if (!(CHECK_KINDS as readonly string[]).includes(k)) throw new UsageError(`--kind must be one of ${CHECK_KINDS.join(', ')}, got "${k}"`);
    kind = k as CheckKind;
    const maxBytes = sizeSetting(env, MAX_CODE_SPEC);
    files = [];
    for (const path of positionals) files.push({ name: path, text: await readCode(path, maxBytes) });
  } catch (err) {
    if (!(err instanceof UsageError) && !isParseArgsError(err)) throw err;
    out.stderr(`${isParseArgsError(err) ? usageMessage(err) : (err as Error).message}\n${CHECK_USAGE}\n`);
    return 2;
  }
  let ts;
  try {
    ts = await loadTypeScript();
  } catch (err) {
    if (!(err instanceof TypeScriptMissingError)) throw err;
    out.stderr(`${err.message}\n`);
    return 2;
  }
  const problems = createIntegrationChecker(ts, DECLARATIONS).check(files, kind);
  for (const p of problems) out.stdout(`${p.file}:${p.line}:${p.column} ${p.message}\n`);
  const what = `${files.length} ${files.length === 1 ? 'file' : 'files'}${kind === 'generic' ? '' : ` (--kind ${kind})`}`;
  if (problems.length === 0) {
    out.stderr(`checked ${what}: no problems\n`);
    return 0;
  }
  const faulty = new Set(problems.map((p) => p.file)).size;
  out.stderr(`${problems.length} ${problems.length === 1 ? 'problem' : 'problems'} in ${faulty} of ${what}\n`);
  return 1;
}

/**
 * The code of one file, as the runner would take it: UTF-8 text (a NUL or an invalid sequence means a
 * binary file, not code) of at most LDBOX_MAX_CODE_BYTES. Size is looked at before reading, so a huge
 * file is refused without being loaded.
 */
async function readCode(path: string, maxBytes: number): Promise<string> {
  let bytes: Buffer;
  try {
    const info = await stat(path);
    if (info.isDirectory()) throw Object.assign(new Error(), { code: 'EISDIR' });
    if (info.size > maxBytes) {
      throw new UsageError(`${path} is ${info.size} bytes, over the runner's limit of ${formatSize(maxBytes)} for code (LDBOX_MAX_CODE_BYTES)`);
    }
    bytes = await readFile(path);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? (err as Error).message);
    throw new UsageError(`cannot read ${path}: ${why}`);
  }
  if (bytes.byteLength > maxBytes) throw new UsageError(`${path} is over the runner's limit of ${formatSize(maxBytes)} for code (LDBOX_MAX_CODE_BYTES)`);
  const nul = bytes.indexOf(0);
  let text: string | undefined;
  try {
    text = nul === -1 ? new TextDecoder('utf-8', { fatal: true }).decode(bytes) : undefined;
  } catch {
    text = undefined;
  }
  if (text === undefined)
    throw new UsageError(`${path} is not text (${nul === -1 ? 'not valid UTF-8' : `a NUL byte at offset ${nul}`}): integration code is JavaScript source`);
  return text;
}
