/**
 * The generated messages' values as the control-plane commands show them: statuses as lower-case words,
 * times in UTC to the second. Imported by the runs (workflows-run.ts, executions-run.ts), not by `--help`.
 */
import { type Timestamp, timestampDate } from '@bufbuild/protobuf/wkt';
import { ExecutionStatus } from '../gen/ldbox/workflows/v1/workflows_pb.js';
import { STATUS_NAMES } from './control-plane-format.js';

/** The statuses an execution can have, by the word the commands use (`--status failed`): STATUS_NAMES, each its enum value. */
export const STATUS_WORDS: Readonly<Record<string, ExecutionStatus>> = Object.fromEntries(
  STATUS_NAMES.map((word) => [word, ExecutionStatus[word.toUpperCase() as keyof typeof ExecutionStatus]]),
);

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
