/** How values of the control plane are shown: statuses, enums, times, durations, JSON. */

/** The execution statuses a filter can pick, as the API names them, with their words. */
export const STATUSES = [
  ['EXECUTION_STATUS_QUEUED', 'queued'],
  ['EXECUTION_STATUS_RUNNING', 'running'],
  ['EXECUTION_STATUS_SUCCEEDED', 'succeeded'],
  ['EXECUTION_STATUS_FAILED', 'failed'],
  ['EXECUTION_STATUS_CANCELLED', 'cancelled'],
];

const WORDS = new Map(STATUSES);
const PREFIXES = /^(EXECUTION_STATUS|AUTH_METHOD|SIGNATURE_PRESET|NODE_ERROR_KIND|ERROR_KIND|LOG_LEVEL|OVER_RATE)_/;

/** `EXECUTION_STATUS_FAILED` → `failed` (an enum the API omits, its zero value, is `unspecified`). */
export function statusWord(status) {
  return WORDS.get(status) ?? enumWord(status);
}

/** `AUTH_METHOD_QUERY_PARAMETER` → `query parameter`; undefined (the zero value) → `unspecified`. */
export function enumWord(value) {
  if (value === undefined || value === '') return 'unspecified';
  return String(value).replace(PREFIXES, '').toLowerCase().replaceAll('_', ' ');
}

/** True for an execution that will not change any more. */
export function isFinal(status) {
  return status === 'EXECUTION_STATUS_SUCCEEDED' || status === 'EXECUTION_STATUS_FAILED' || status === 'EXECUTION_STATUS_CANCELLED';
}

const pad = (n, width = 2) => String(n).padStart(width, '0');

/** An RFC 3339 time as local `YYYY-MM-DD HH:MM:SS.mmm`, or `-` when unset. */
export function formatTime(iso) {
  if (iso === undefined) return '-';
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** The local `YYYY-MM-DDTHH:MM:SS` of an RFC 3339 time, as a datetime-local input takes it ('' when unset). */
export function toLocalInput(iso) {
  return iso ? formatTime(iso).slice(0, 19).replace(' ', 'T') : '';
}

/** The time from `from` to `to` (RFC 3339): `850 ms`, `2.4 s`, `3 min 5 s`; `-` when either is unset. */
export function formatDuration(from, to) {
  if (from === undefined || to === undefined) return '-';
  const ms = Math.max(0, new Date(to).getTime() - new Date(from).getTime());
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** A value as indented JSON (`null` when unset). */
export function formatJson(value) {
  return value === undefined ? 'null' : JSON.stringify(value, null, 2);
}
