/**
 * The argument values of the control-plane commands that both a subcommand's checks (workflows-command.ts,
 * executions-command.ts: --help and usage errors) and its run (workflows-run.ts, executions-run.ts) read:
 * a module of its own, so that the runs do not import the modules that import them.
 *
 * Tests: test/cli/control-plane-cli.test.ts.
 */
import { CommandUsageError, type ParsedValues } from './control-plane-command.js';
import { STATUS_NAMES } from './control-plane-format.js';

/** The workspace of a workflow whose file names none, when `--workspace` is not given either. */
export const DEFAULT_WORKSPACE = 'default';

/** `--limit N`: a whole number from 1 to 10000. */
export function parseLimit(raw: string): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= 10_000)) throw new CommandUsageError(`--limit must be a whole number from 1 to 10000, got ${JSON.stringify(raw)}`);
  return n;
}

const SINCE_UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since 30m|1h|2d|45s` (before now) or an RFC 3339 time; exact message otherwise. */
export function parseSince(raw: string, now: Date, flag = '--since'): Date {
  const m = /^(\d{1,9})([smhd])$/.exec(raw);
  if (m && Number(m[1]) > 0) return new Date(now.getTime() - Number(m[1]) * SINCE_UNITS[m[2]!]!);
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i.test(raw) && !Number.isNaN(Date.parse(raw))) return new Date(raw);
  throw new CommandUsageError(`${flag} takes a time before now (30s, 30m, 1h, 2d) or an RFC 3339 time (2026-11-24T10:00:00Z), got ${JSON.stringify(raw)}`);
}

/** `--status failed,succeeded` (repeatable, any case): the status words, each once, lower case; exact message otherwise. */
export function parseStatusWords(raw: readonly string[]): string[] {
  const out = new Set<string>();
  for (const word of raw.flatMap((r) => r.split(','))) {
    const s = word.trim().toLowerCase();
    if (!STATUS_NAMES.includes(s)) {
      throw new CommandUsageError(`--status takes ${STATUS_NAMES.join(', ')} (comma-separated, any case), got ${JSON.stringify(word)}`);
    }
    out.add(s);
  }
  return [...out];
}

/** The times of `--since` and `--until`; `--until` must be later. */
export function filterTimes(values: ParsedValues, now: Date): { after: Date | undefined; before: Date | undefined } {
  const after = values.since === undefined ? undefined : parseSince(values.since as string, now);
  const before = values.until === undefined ? undefined : parseSince(values.until as string, now, '--until');
  if (after !== undefined && before !== undefined && after.getTime() >= before.getTime()) {
    throw new CommandUsageError(`--until (${before.toISOString()}) must be later than --since (${after.toISOString()})`);
  }
  return { after, before };
}
