/**
 * Redaction of authentication values (spec "Utilities": ld.log redacts them; DESIGN: also in error
 * messages, and the base64 forms used in Basic auth).
 */

export const REDACTED = '[REDACTED]';

/** Values shorter than this are not treated as secrets: redacting "1" or "id" would shred every log line. */
const MIN_SECRET_LENGTH = 4;
/** Basic-auth pairs are formed among at most this many values (n² pairs). */
const MAX_PAIRED_VALUES = 32;

/** Collects every string value (at any depth) of `data.auth`. */
export function collectSecrets(auth: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown, depth: number): void => {
    if (typeof v === 'string') out.push(v);
    else if (typeof v === 'number' && String(v).length >= MIN_SECRET_LENGTH) out.push(String(v));
    else if (v !== null && typeof v === 'object' && depth < 32) {
      for (const x of Array.isArray(v) ? v : Object.values(v)) walk(x, depth + 1);
    }
  };
  walk(auth, 0);
  return out;
}

export type Redact = (text: string) => string;

/**
 * Builds a function that replaces every secret, its base64 form, and the base64 of every
 * `a:b` pair of secrets (Basic auth's `btoa(user + ':' + password)`) with `[REDACTED]`.
 * Longer secrets are replaced first, so a secret that contains another disappears whole.
 */
export function createRedactor(secrets: readonly string[]): Redact {
  const all = [...new Set(secrets.filter((s) => s.length > 0))];
  const values = all.filter((s) => s.length >= MIN_SECRET_LENGTH);
  if (values.length === 0) return (text) => text;
  const forms = new Set<string>();
  for (const v of values) {
    forms.add(v);
    forms.add(base64(v));
    forms.add(base64(v).replace(/=+$/, ''));
  }
  // A short username still takes part in Basic auth: pairs are formed among all values, however short.
  const paired = all.slice(0, MAX_PAIRED_VALUES);
  for (const a of paired) for (const b of paired) if (a !== b) forms.add(base64(`${a}:${b}`));
  const pattern = new RegExp(
    [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((x, y) => y.length - x.length).map(escapeRegExp).join('|'),
    'g',
  );
  return (text) => text.replace(pattern, REDACTED);
}

function base64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
