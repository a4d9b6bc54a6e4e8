/** A returned value that does not have its result kind's shape; the message names every field at fault. */
export class InvalidResultError extends Error {
  override readonly name = 'InvalidResultError';
}

/** A problem that ends the check at once: the value is not even the right kind of thing (a string for a list). */
export function fail(path: string, problem: string): never {
  throw new InvalidResultError(`${path} ${problem}`);
}

/** How many problems one message lists; the rest are counted ("and 12 more"), so a huge result cannot make a huge message. */
export const MAX_LISTED_PROBLEMS = 20;

/**
 * Every problem of one result, so that the author fixes them in one go rather than one run per missing
 * field: the checks record a problem and carry on, and `throwIfAny` throws one InvalidResultError that
 * lists them all (`result[0].documentId is required; result[0].title is required`). One problem reads
 * as before: `result[0].documentId is required`. `ldbox check` reports the same set before a run
 * (src/check/missing-fields.ts).
 */
export class ResultProblems {
  private readonly listed: string[] = [];
  private count = 0;

  add(path: string, problem: string): void {
    this.count++;
    if (this.listed.length < MAX_LISTED_PROBLEMS) this.listed.push(`${path} ${problem}`);
  }

  get size(): number {
    return this.count;
  }

  throwIfAny(): void {
    if (this.count === 0) return;
    if (this.count === 1) throw new InvalidResultError(this.listed[0]!);
    const more = this.count - this.listed.length;
    throw new InvalidResultError(`${this.count} problems: ${this.listed.join('; ')}${more > 0 ? `; and ${more} more` : ''}`);
  }

  /** The string at `path`, or undefined (and a problem recorded) when `v` is not one. */
  string(v: unknown, path: string): string | undefined {
    if (typeof v === 'string') return v;
    this.add(path, `must be a string, got ${describeType(v)}`);
    return undefined;
  }

  /** A string that must have a value: absent, null and '' are "is required" (spec "Native search" rule 1). */
  requiredString(v: unknown, path: string): string | undefined {
    if (!hasValue(v)) {
      this.add(path, 'is required');
      return undefined;
    }
    return this.string(v, path);
  }

  /** A string that must not be empty (a file's name and type). */
  nonEmptyString(v: unknown, path: string): string | undefined {
    const s = this.string(v, path);
    if (s === '') this.add(path, 'must not be empty');
    return s === '' ? undefined : s;
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

export function describeType(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'binary data';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** "Without a value": absent, null, or the empty string (spec "Native search" rule 1). */
export function hasValue(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '';
}
