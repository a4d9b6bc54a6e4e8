import type { Redact } from './redactor.js';
import type { SandboxLog } from './types.js';

const TRUNCATED = ' [truncated]';

/**
 * The call's logs, bounded: past `maxEntries` or `maxChars` further entries are dropped and one
 * warning entry says how many. Logs may be truncated; results never are.
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
    // One line longer than the whole budget is cut (and marked) rather than dropped.
    if (message.length > this.maxChars) message = `${message.slice(0, Math.max(0, this.maxChars - TRUNCATED.length))}${TRUNCATED}`;
    if (this.dropped > 0 || this.entries.length >= this.maxEntries || this.chars + message.length > this.maxChars) {
      this.dropped++;
      return;
    }
    this.chars += message.length;
    this.entries.push({ level: 'info', message: this.redact(message) });
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
