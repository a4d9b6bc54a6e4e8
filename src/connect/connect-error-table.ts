/**
 * The shape of a Connect edge's error table (the runner's RUNNER_ERRORS, the control plane's
 * CONTROL_PLANE_ERRORS), the counterpart of the webhook edge's WEBHOOK_ERRORS: one row per error class
 * with its gRPC code and what the client is told, so that an edge's whole mapping is one value a test
 * can assert (STYLE.md, "Errors", after fastify's `lib/errors.js`).
 *
 * Rows are tried in order; the last one should match anything (the fallback). A `ConnectError` is already
 * an answer and is returned as it is. The error is always kept as the answer's `cause`, for logs: connect
 * never sends it to the client.
 */
import { type Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from '../logging/logger.js';

/** The message policy "the error's own message is written for the client: send it as it is". */
export const OWN_MESSAGE: unique symbol = Symbol('own message');

export interface ConnectErrorRow {
  /** Whether the row is for `err` (a class check, or a predicate of the error's module). */
  is(err: unknown): boolean;
  code: Code;
  /**
   * {@link OWN_MESSAGE}, or the fixed text sent instead: the error may hold what is not the client's to
   * see (a host path, a worker's stack), so it is logged (`log`) and the client gets this.
   */
  message: typeof OWN_MESSAGE | string;
  /** Log the error at this level with this message (the client's answer alone would not explain it). */
  log?: { level: 'warn' | 'error'; msg: string };
}

/** Rows keyed by the name of the error class they are for (`Error` for the fallback). */
export type ConnectErrorTable = Readonly<Record<string, ConnectErrorRow>>;

/** A gRPC status and the message sent to the client. */
export interface CallStatus {
  code: Code;
  message: string;
}

/** The first row of `table` for `err`; throws when none matches (a table without a fallback row is a bug). */
export function rowOf(table: ConnectErrorTable, err: unknown): ConnectErrorRow {
  for (const row of Object.values(table)) if (row.is(err)) return row;
  throw new Error('error table without a fallback row');
}

/** The status `table` gives `err`, logging it (with `fields`) when its row says so. */
export function statusOf(table: ConnectErrorTable, err: unknown, fields: Record<string, unknown>, log: Logger): CallStatus {
  const row = rowOf(table, err);
  if (row.log) log[row.log.level]({ ...fields, err }, row.log.msg);
  const message = row.message === OWN_MESSAGE ? (err instanceof Error ? err.message : String(err)) : row.message;
  return { code: row.code, message };
}

/** `err` as the ConnectError `table` maps it to, with `err` as its `cause`. */
export function connectErrorOf(table: ConnectErrorTable, err: unknown, fields: Record<string, unknown>, log: Logger): ConnectError {
  if (err instanceof ConnectError) return err;
  const { code, message } = statusOf(table, err, fields, log);
  return new ConnectError(message, code, undefined, undefined, err);
}

/** `is` for a row of one class. */
export function instanceOf(cls: abstract new (...args: never[]) => unknown): (err: unknown) => boolean {
  return (err) => err instanceof cls;
}
