import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;

/**
 * Structured JSON logs (pino) on stdout, one object per line. Anything that can carry a
 * secret is redacted by path before it is written; callers never log request bodies or auth values.
 */
export function createLogger(role: string, level = 'info'): Logger {
  return pino({
    level,
    base: { role },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['authorization', 'headers.authorization', 'headers["x-webhook-secret"]', 'secret', 'token', 'auth'],
      censor: '[REDACTED]',
    },
  });
}

/** A logger that writes nothing (tests, and the CLI's `run`). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
