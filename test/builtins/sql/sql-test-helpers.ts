/**
 * Calls the SQL built-ins directly (no runner) and gives back their outcome as plain data.
 */
import type { BuiltinContext, SyncBuiltin } from '../../../runner/builtins/guest-boundary.js';
import { GuestFacingError } from '../../../runner/builtins/guest-boundary.js';

/** The checks only read the deadline. */
export const CTX = { deadline: Number.POSITIVE_INFINITY } as BuiltinContext;

export type Outcome = { value: unknown } | { name: string; message: string };

export function call(fn: SyncBuiltin, args: unknown[], ctx: BuiltinContext = CTX): Outcome {
  try {
    return { value: fn(args, ctx) };
  } catch (err) {
    if (err instanceof GuestFacingError) return { name: err.guestName, message: err.message };
    throw err;
  }
}

/** One corpus row: the dialect it is written for, the query, and the expected outcome. */
export interface Row {
  dialect: 'PostgreSQL' | 'MySQL' | 'BigQuery' | 'Snowflake' | 'T-SQL' | 'any';
  why: string;
  query: string;
  /** `true`: the trimmed query comes back; a string: an Error with exactly this message. */
  expect: true | string | { name: string; message: string };
}

export function expected(row: Row): Outcome {
  if (row.expect === true) return { value: row.query.trim() };
  if (typeof row.expect === 'string') return { name: 'Error', message: row.expect };
  return row.expect;
}
