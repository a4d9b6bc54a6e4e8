import { type Redact, redactThenCap } from './redactor.js';
import type { SandboxLog } from './types.js';

/**
 * The call's logs, bounded: past `maxEntries` or `maxChars` further entries are dropped and one
 * warning entry says how many. Logs may be truncated; results never are. Each line is redacted
 * before it is measured or cut, so the budget counts what is kept and no cut leaves a piece of a
 * secret (test/runner/redaction.test.ts).
 */
export class LogBuffer {
  readonly entries: SandboxLog[] = [];
  private chars = 0;
  private dropped = 0;

  constructor(
    private readonly redact: Redact,
    private readonly maxEntries: number,
    private readonly maxChars: number,
  ) {}

  info(message: string): void {
    this.add('info', message);
  }

  /** A warning of the sandbox about the call (a result left `undefined`, an `ld.*` promise nothing awaited). */
  warn(message: string): void {
    this.add('warn', message);
  }

  private add(level: SandboxLog['level'], message: string): void {
    if (this.dropped > 0 || this.entries.length >= this.maxEntries) {
      this.dropped++;
      return;
    }
    // One line longer than the whole budget is cut (and marked) rather than dropped. The guest sends
    // at most maxChars + 1 characters of a line: a longer one was cut there, perhaps inside a secret.
    const shown = redactThenCap(this.redact, message, this.maxChars, message.length > this.maxChars);
    if (this.chars + shown.length > this.maxChars) {
      this.dropped++;
      return;
    }
    this.chars += shown.length;
    this.entries.push({ level, message: shown });
  }

  /** The entries, with the truncation marker when anything was dropped. */
  finish(): SandboxLog[] {
    if (this.dropped > 0) {
      this.entries.push({
        level: 'warn',
        message: `logs truncated: ${this.dropped} more entries dropped (limits: ${this.maxEntries} entries, ${this.maxChars} characters)`,
      });
      this.dropped = 0;
    }
    return this.entries;
  }
}
