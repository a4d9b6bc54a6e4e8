/** Helpers for the tests of the Connect edges' error tables (src/connect/connect-error-table.ts). */
import { Writable } from 'node:stream';
import { Code } from '@connectrpc/connect';
import { pino } from 'pino';
import { type ConnectErrorTable, OWN_MESSAGE } from '../../src/connect/connect-error-table.js';
import type { Logger } from '../../src/logging/logger.js';

/** Each row as `[code name, message policy, log]`: the table as one value a test can assert whole. */
export function tableSummary(table: ConnectErrorTable): Record<string, [string, string, string]> {
  return Object.fromEntries(
    Object.entries(table).map(([name, row]) => [
      name,
      [Code[row.code], row.message === OWN_MESSAGE ? 'own message' : row.message, row.log ? `${row.log.level}: ${row.log.msg}` : 'no log'],
    ]),
  );
}

export interface LoggedLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** A logger that keeps its lines: level, message, the context fields, and the logged error's message. */
export function capturingLogger(): { logger: Logger; lines(): LoggedLine[] } {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      raw.push(chunk.toString('utf8'));
      done();
    },
  });
  // pino writes synchronously to a plain stream's write().
  const logger = pino({ level: 'debug', base: undefined, timestamp: false, formatters: { level: (label) => ({ level: label }) } }, stream);
  return {
    logger,
    lines: () =>
      raw.map((l) => {
        const { err, ...rest } = JSON.parse(l) as { err?: { message: string } } & LoggedLine;
        return { ...rest, ...(err ? { errMessage: err.message } : {}) };
      }),
  };
}
