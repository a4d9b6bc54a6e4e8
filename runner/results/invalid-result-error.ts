/** A returned value that does not have its result kind's shape; the message names the field. */
export class InvalidResultError extends Error {
  override readonly name = 'InvalidResultError';
}

export function fail(path: string, problem: string): never {
  throw new InvalidResultError(`${path} ${problem}`);
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

export function requireString(v: unknown, path: string): string {
  if (typeof v !== 'string') fail(path, `must be a string, got ${describeType(v)}`);
  return v;
}

/** "Without a value": absent, null, or the empty string (spec "Native search" rule 1). */
export function hasValue(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '';
}
