/**
 * Ids of workflows, webhooks and executions. All use Crockford's base32 alphabet in lower case
 * (`0-9 a-z` without `i l o u`): URL-safe, case-insensitive to read aloud, and in ASCII order, so that
 * the time prefix of an execution id sorts like the time it encodes.
 *
 * - workflow `wf_` + 20 random characters (100 bits);
 * - webhook `wh_` + 20 random characters;
 * - execution `ex_` + 10 characters of creation time (milliseconds since the epoch, big-endian) + 16
 *   random characters (80 bits): ids of one workflow sort by creation time, newest last.
 *
 * The format checks are what the gateway runs before any lookup (a malformed id is 400, docs/design.md).
 * Tests: test/workflows/ids.test.ts.
 */
import { randomBytes } from 'node:crypto';
import type { RandomBytes } from './webhook-secret.js';

/** Crockford base32, lower case. 32 symbols, so `byte & 31` picks one without bias. */
export const ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

const WORKFLOW_ID = /^wf_[0-9a-hjkmnp-tv-z]{20}$/;
const WEBHOOK_ID = /^wh_[0-9a-hjkmnp-tv-z]{20}$/;
const EXECUTION_ID = /^ex_[0-9a-hjkmnp-tv-z]{26}$/;
const TIME_CHARS = 10;

function randomChars(n: number, random: RandomBytes): string {
  const bytes = random(n);
  let out = '';
  for (let i = 0; i < n; i++) out += ID_ALPHABET[bytes[i]! & 31];
  return out;
}

/** A new workflow id: `wf_` and 20 random characters. */
export function newWorkflowId(random: RandomBytes = randomBytes): string {
  return `wf_${randomChars(20, random)}`;
}

/** True when `s` has the format of a workflow id. */
export function isWorkflowId(s: string): boolean {
  return WORKFLOW_ID.test(s);
}

/** A new webhook id: `wh_` and 20 random characters. */
export function newWebhookId(random: RandomBytes = randomBytes): string {
  return `wh_${randomChars(20, random)}`;
}

/** True when `s` has the format of a webhook id. */
export function isWebhookId(s: string): boolean {
  return WEBHOOK_ID.test(s);
}

/** A new execution id: `ex_`, the creation time `now` in 10 characters, then 16 random characters. */
export function newExecutionId(now: Date, random: RandomBytes = randomBytes): string {
  let ms = now.getTime();
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`cannot encode the time ${String(ms)} in an execution id`);
  let time = '';
  for (let i = 0; i < TIME_CHARS; i++) {
    time = ID_ALPHABET[ms % 32]! + time;
    ms = Math.floor(ms / 32);
  }
  return `ex_${time}${randomChars(16, random)}`;
}

/** True when `s` has the format of an execution id. */
export function isExecutionId(s: string): boolean {
  return EXECUTION_ID.test(s);
}

/** The creation time encoded in an execution id; undefined when `id` is not one. */
export function executionIdTime(id: string): Date | undefined {
  if (!isExecutionId(id)) return undefined;
  let ms = 0;
  for (const c of id.slice(3, 3 + TIME_CHARS)) ms = ms * 32 + ID_ALPHABET.indexOf(c);
  return new Date(ms);
}
