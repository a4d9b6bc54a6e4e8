/**
 * Redaction of authentication values (spec "Utilities": ld.log redacts them; docs/design.md: also in error
 * messages, and the encoded forms a secret takes on its way into a log line: JSON, URLs, base64).
 * Tests: test/runner/redaction.test.ts.
 */
import type { Redact } from '../builtins/guest-boundary.js';

export const REDACTED = '[REDACTED]';
/** Marks a text cut at its length budget. */
export const TRUNCATED = ' [truncated]';

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

export type { Redact };

/**
 * Builds a function that replaces every secret (a value of at least 4 characters) and its encoded
 * forms with `[REDACTED]`:
 * - as written inside a JSON string (`ld.log({k: secret})`), once and twice escaped;
 * - URL-encoded: `encodeURIComponent`, form encoding (`+` for a space), a URL path's encoding
 *   (percent escapes match in either case);
 * - base64 and base64url, padded or not, of the secret, of `secret:` and `:secret` (Basic auth with an
 *   empty password or user name), of `Bearer secret`, and of every `a:b` pair among the first 32
 *   values however short (Basic auth's `btoa(user + ':' + password)`);
 * - the part of the base64 of any text containing the secret that depends on the secret alone (the
 *   whole base64 groups at each of the three alignments), so `btoa('x=' + secret)` is redacted but
 *   for the one or two groups at its ends.
 * Longer forms are replaced first, so a form that contains another disappears whole. All forms make
 * one RegExp, so the cost stays linear in the text.
 */
export function createRedactor(secrets: readonly string[]): Redact {
  const all = [...new Set(secrets.filter((s) => s.length > 0))];
  const values = all.filter((s) => s.length >= MIN_SECRET_LENGTH);
  if (values.length === 0) return (text) => text;
  const forms = new Set<string>();
  for (const v of values) {
    const json = jsonEscaped(v);
    forms.add(v).add(json).add(jsonEscaped(json));
    for (const f of urlForms(v)) forms.add(f);
    for (const s of [v, `${v}:`, `:${v}`, `Bearer ${v}`]) for (const f of base64Forms(utf8(s))) forms.add(f);
    for (const f of alignedBase64Cores(utf8(v))) forms.add(f);
  }
  // A short username still takes part in Basic auth: pairs are formed among all values, however short.
  const paired = all.slice(0, MAX_PAIRED_VALUES);
  for (const a of paired) for (const b of paired) forms.add(utf8(`${a}:${b}`).toString('base64'));
  const kept = [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((x, y) => y.length - x.length);
  const pattern = new RegExp(kept.map(toPatternSource).join('|'), 'g');
  const partialTail = partialTailFinder(kept);
  const cutShort = (text: string): string => {
    const from = text.length - partialTail(text);
    let out = '';
    let last = 0;
    // Redacted as a whole text first, so a secret that starts before the dropped end is still one match.
    for (const m of text.matchAll(pattern)) {
      if (m.index >= from) break;
      out += `${text.slice(last, m.index)}${REDACTED}`;
      last = m.index + m[0].length;
      if (last > from) return out;
    }
    return `${out}${text.slice(last, from)}`;
  };
  return Object.assign((text: string) => text.replace(pattern, REDACTED), { cutShort });
}

/**
 * Redacts `text`, then cuts it to `maxChars` (the budget applies to the redacted text, and a secret
 * cannot straddle the cut): a longer result is cut, never inside a `[REDACTED]`, and ends with
 * ` [truncated]`, the whole at most `maxChars` long. With `cutShort` the text is itself the start of a
 * longer text (a log line the guest cut at the budget): a piece of a secret at its end is dropped and
 * it is marked as truncated whatever its length.
 */
export function redactThenCap(redact: Redact, text: string, maxChars: number, cutShort = false): string {
  const out = cutShort && redact.cutShort ? redact.cutShort(text) : redact(text);
  if (!cutShort && out.length <= maxChars) return out;
  let end = Math.min(out.length, Math.max(0, maxChars - TRUNCATED.length));
  const marker = out.lastIndexOf(REDACTED, end - 1);
  if (marker >= 0 && marker + REDACTED.length > end) end = marker;
  return `${out.slice(0, end)}${TRUNCATED}`;
}

function utf8(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

/** The secret as it appears between the quotes of a JSON string (`ld.log({k: secret})`). */
function jsonEscaped(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/** `encodeURIComponent`, form encoding (application/x-www-form-urlencoded) and a URL path's encoding. */
function urlForms(s: string): string[] {
  const out = [new URLSearchParams([['', s]]).toString().slice(1), pathEncoded(s)];
  try {
    out.push(encodeURIComponent(s));
  } catch {
    // A lone surrogate: URLSearchParams and URL write it as U+FFFD, encodeURIComponent throws.
  }
  return out;
}

/** Encoded as a URL path is (WHATWG path percent-encode set): C0 controls, space, " # < > ? ` { }, DEL and non-ASCII. */
function pathEncoded(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    const encode = c <= 0x20 || c >= 0x7f || '"#<>?`{}'.includes(ch);
    out += encode ? [...utf8(ch)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('') : ch;
  }
  return out;
}

function base64Forms(bytes: Buffer): string[] {
  const padded = bytes.toString('base64');
  const url = bytes.toString('base64url');
  return [padded, padded.replace(/=+$/, ''), url, `${url}${padded.slice(url.length)}`];
}

/**
 * For each of the 3 offsets at which the secret can start in a longer text, the base64 groups made of
 * the secret's bytes alone (standard and url alphabets). Like a value, a core of fewer than 4 bytes
 * (so 3) is not redacted alone: it would match random base64.
 */
function alignedBase64Cores(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let skip = 0; skip < 3; skip++) {
    const whole = Math.floor((bytes.length - skip) / 3) * 3;
    if (whole < MIN_SECRET_LENGTH) continue;
    const core = bytes.subarray(skip, skip + whole);
    out.push(core.toString('base64'), core.toString('base64url'));
  }
  return out;
}

/** The form as a RegExp source; the hex digits of a percent escape match in either case (%2f, %2F). */
function toPatternSource(form: string): string {
  return escapeRegExp(form).replace(/%([0-9A-F])([0-9A-F])/g, (_, a: string, b: string) => `%${hexClass(a)}${hexClass(b)}`);
}

function hexClass(d: string): string {
  return /[A-F]/.test(d) ? `[${d}${d.toLowerCase()}]` : d;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Finds the length of the longest end of a text that is a proper start of a form (ASCII letters compared without
 * case, for percent escapes; a few characters too many are dropped at worst). Forms are grouped by
 * their first character, so each position of the text's end is compared with few forms.
 */
function partialTailFinder(forms: readonly string[]): (text: string) => number {
  const byFirst = new Map<number, string[]>();
  let longest = 0;
  for (const f of forms) {
    const key = fold(f.charCodeAt(0));
    const list = byFirst.get(key) ?? [];
    list.push(f);
    byFirst.set(key, list);
    longest = Math.max(longest, f.length);
  }
  return (text) => {
    for (let p = Math.max(0, text.length - longest + 1); p < text.length; p++) {
      const rest = text.length - p;
      const candidates = byFirst.get(fold(text.charCodeAt(p)));
      if (candidates?.some((f) => f.length > rest && startsWithFolded(f, text, p))) return rest;
    }
    return 0;
  };
}

/** Whether `form` starts with `text.slice(from)`, ASCII letters compared without case. */
function startsWithFolded(form: string, text: string, from: number): boolean {
  for (let i = from; i < text.length; i++) if (fold(form.charCodeAt(i - from)) !== fold(text.charCodeAt(i))) return false;
  return true;
}

function fold(c: number): number {
  return c >= 65 && c <= 90 ? c | 0x20 : c;
}
