/**
 * How the control-plane commands show things to people: aligned tables, statuses as lower-case words,
 * durations in ms / s / min. Machines take `--json` instead. What needs the generated messages (statuses,
 * times) is in control-plane-values.ts, so that `--help` and the argument checks do not load them.
 */

/** The words of the statuses an execution can have, as the commands use them (`--status failed`), in order. */
export const STATUS_NAMES: readonly string[] = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];

/** Columns padded to their widest cell, two spaces apart, the header first; trailing spaces trimmed. */
export function formatTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[header, ...rows].map(line).join('\n')}\n`;
}

/** How an `ls` command shows its items. */
export interface Listing<T> {
  /** `--json`: the items as a JSON array, each by `toJson`. */
  json: boolean;
  toJson(item: T): unknown;
  /** What there is none of (`workflows`), said on stderr when the list is empty. */
  none: string;
  header: readonly string[];
  row(item: T): string[];
}

/** Prints `items` as `how` says (a JSON array, a table, or `no …` on stderr); the exit code, 0. */
export function printListing<T>(out: { stdout(s: string): void; stderr(s: string): void }, items: readonly T[], how: Listing<T>): number {
  if (how.json) out.stdout(`${JSON.stringify(items.map(how.toJson), null, 2)}\n`);
  else if (items.length === 0) out.stderr(`no ${how.none}\n`);
  else out.stdout(formatTable(how.header, items.map(how.row)));
  return 0;
}

/** `340 ms`, `2.4 s`, `3.5 min`, or `-`. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '-';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** The first line of `s`, at most `max` characters (an ellipsis marks a cut). */
export function oneLine(s: string, max = 60): string {
  const first = s.split('\n', 1)[0]!;
  const cut = first.length > max || first.length < s.length;
  return cut ? `${first.slice(0, max - 1)}…` : first;
}
