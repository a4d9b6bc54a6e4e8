/**
 * How the control-plane commands show things to people: aligned tables, statuses as lower-case words,
 * times in UTC to the second, durations in ms / s / min. Machines take `--json` instead.
 */
import { type Timestamp, timestampDate } from '@bufbuild/protobuf/wkt';
import { ExecutionStatus } from '../gen/ldbox/workflows/v1/workflows_pb.js';

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

/** The statuses an execution can have, by the word the commands use (`--status failed`). */
export const STATUS_WORDS: Readonly<Record<string, ExecutionStatus>> = {
  queued: ExecutionStatus.QUEUED,
  running: ExecutionStatus.RUNNING,
  succeeded: ExecutionStatus.SUCCEEDED,
  failed: ExecutionStatus.FAILED,
  cancelled: ExecutionStatus.CANCELLED,
};

export function statusWord(s: ExecutionStatus): string {
  return Object.entries(STATUS_WORDS).find(([, v]) => v === s)?.[0] ?? `unknown(${s})`;
}

/** True when an execution with this status will not change any more. */
export function isFinal(s: ExecutionStatus): boolean {
  return s === ExecutionStatus.SUCCEEDED || s === ExecutionStatus.FAILED || s === ExecutionStatus.CANCELLED;
}

/** `2026-11-24T10:00:03Z` (UTC, to the second), or `-` when unset. */
export function formatTime(t: Timestamp | undefined): string {
  if (t === undefined) return '-';
  return timestampDate(t)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z');
}

/** Milliseconds between two timestamps, or undefined when either is unset. */
export function msBetween(from: Timestamp | undefined, to: Timestamp | undefined): number | undefined {
  if (from === undefined || to === undefined) return undefined;
  return timestampDate(to).getTime() - timestampDate(from).getTime();
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
