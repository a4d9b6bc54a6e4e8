/**
 * Signed webhook calls (issue 12 item 1; proto `AUTH_METHOD_SIGNATURE`, `SignaturePreset`): the way
 * GitHub, Stripe, Standard Webhooks senders, Shopify and Slack sign a call, checked over the raw body bytes.
 *
 * Every preset is an HMAC-SHA256 (node:crypto) of the body, or of a string that embeds it:
 *
 * | preset | header(s) | signed bytes | encoding | key |
 * |---|---|---|---|---|
 * | github | `X-Hub-Signature-256: sha256=<hex>` | body | hex | the secret (UTF-8) |
 * | stripe | `Stripe-Signature: t=<s>,v1=<hex>[,v1=…]` | `<t>.<body>` | hex | the secret (UTF-8) |
 * | standard-webhooks | `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<b64>[ v1,…]` | `<id>.<ts>.<body>` | base64 | base64 after `whsec_` |
 * | shopify | `X-Shopify-Hmac-Sha256: <b64>` | body | base64 | the secret (UTF-8) |
 * | slack | `X-Slack-Signature: v0=<hex>`, `X-Slack-Request-Timestamp` | `v0:<ts>:<body>` | hex | the secret (UTF-8) |
 *
 * - The presented signature is decoded to its 32 bytes and compared with `timingSafeEqual`; every secret
 *   (current, and previous in its grace period) and every listed signature is compared, with no early exit.
 * - Timestamped presets (stripe, standard-webhooks, slack) refuse a timestamp further than the tolerance
 *   from now, either way (`stale_signature`), after the signature matched. An accepted one gives a
 *   `replayKey`, which the gateway claims cluster-wide so that the same signed call is refused the second
 *   time (`replayed_signature`) while its timestamp is still fresh.
 * - Messages name headers and formats, never a presented value or a secret.
 *
 * Why not the `standardwebhooks` package: it computes SHA-256 in JavaScript (fast-sha256) where node:crypto
 * is native, fixes its tolerance at 5 minutes and keeps no replay record, and would bring two packages for
 * what is {@link verifySignature}'s one branch. Tests use the Standard Webhooks spec's published vector.
 *
 * Tests: test/workflows/webhook-signature.test.ts, test/gateway/webhook-signatures.test.ts.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { JsonValue } from '@bufbuild/protobuf';

/** How a sender signs (the proto's SignaturePreset). */
export type SignaturePresetName = 'github' | 'stripe' | 'standard-webhooks' | 'shopify' | 'slack';

export const SIGNATURE_PRESETS: readonly SignaturePresetName[] = ['github', 'stripe', 'standard-webhooks', 'shopify', 'slack'];

/**
 * Headers that carry a signature, of every preset, lower case. They are never passed on to
 * `trigger.output.headers` (the sender's signature is of no use to a node, and a signature of a known body
 * helps an attacker guess nothing but is still credential material).
 */
export const SIGNATURE_HEADERS: readonly string[] = [
  'x-hub-signature-256',
  'x-hub-signature',
  'stripe-signature',
  'webhook-signature',
  'x-shopify-hmac-sha256',
  'x-slack-signature',
];

/** Default tolerance of timestamped presets (LDBOX_SIGNATURE_TOLERANCE). */
export const DEFAULT_SIGNATURE_TOLERANCE_MS = 5 * 60_000;

/** Bounds of a signing secret given by the sender's platform. */
export const SIGNING_SECRET_CHARS = Object.freeze({ min: 16, max: 1024 });
/** Bounds of the decoded key of a Standard Webhooks secret (the spec's 24 to 64 bytes). */
const STANDARD_KEY_BYTES = Object.freeze({ min: 24, max: 64 });
const PRINTABLE = /^[\x21-\x7e]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const HEX64 = /^[0-9a-fA-F]{64}$/;
const SECONDS = /^[0-9]{1,12}$/;
/** Most signatures a header may list (Stripe and Standard Webhooks send one per active secret). */
const MAX_LISTED = 8;

/** The Standard Webhooks prefix of a secret, also used for generated signing secrets. */
export const SIGNING_SECRET_PREFIX = 'whsec_';

/**
 * A new signing secret: `whsec_` and the standard base64 of 32 random bytes. Every preset takes it (a
 * Standard Webhooks sender decodes the base64; the others use the string as it is).
 */
export function generateSigningSecret(random: (n: number) => Buffer = randomBytes): string {
  return SIGNING_SECRET_PREFIX + random(32).toString('base64');
}

/** Why `secret` cannot be the signing secret of `preset`; undefined when it can. Never quotes the secret. */
export function signingSecretProblem(preset: SignaturePresetName, secret: string): string | undefined {
  if (secret.length < SIGNING_SECRET_CHARS.min || secret.length > SIGNING_SECRET_CHARS.max) {
    return `secret must be ${SIGNING_SECRET_CHARS.min} to ${SIGNING_SECRET_CHARS.max} characters, got ${secret.length}`;
  }
  // Spaces are allowed: GitHub takes any text as a secret (its documented example has them).
  if (!/^[\x20-\x7e]+$/.test(secret)) return 'secret must be printable ASCII';
  if (preset === 'standard-webhooks') {
    const key = standardKey(secret);
    if (key === undefined) return 'a Standard Webhooks secret is "whsec_" and base64 (as the sender shows it)';
    if (key.length < STANDARD_KEY_BYTES.min || key.length > STANDARD_KEY_BYTES.max) {
      return `a Standard Webhooks secret decodes to ${STANDARD_KEY_BYTES.min} to ${STANDARD_KEY_BYTES.max} bytes, got ${key.length}`;
    }
  }
  return undefined;
}

/** The HMAC key of a Standard Webhooks secret: the base64 after an optional `whsec_`. */
function standardKey(secret: string): Buffer | undefined {
  const b64 = secret.startsWith(SIGNING_SECRET_PREFIX) ? secret.slice(SIGNING_SECRET_PREFIX.length) : secret;
  return b64 !== '' && BASE64.test(b64) ? Buffer.from(b64, 'base64') : undefined;
}

/** Reads a request header: every value it was sent with (undefined when absent). */
export type HeaderReader = (name: string) => readonly string[] | undefined;

/** The secrets a call may be signed with: the current one, and the previous one while in its grace period. */
export interface SigningSecrets {
  current: string;
  previous?: string | undefined;
}

export type SignatureErrorCode = 'missing_signature' | 'bad_signature' | 'stale_signature';

export type SignatureCheck =
  | {
      ok: true;
      matched: 'current' | 'previous';
      /** For timestamped presets: what identifies this signed call, to refuse its replay. */
      replayKey?: string;
    }
  | { ok: false; code: SignatureErrorCode; message: string };

/** The header names of a preset, as senders write them (for messages). */
const SHOWN = {
  github: 'X-Hub-Signature-256',
  stripe: 'Stripe-Signature',
  standard: 'webhook-signature',
  shopify: 'X-Shopify-Hmac-Sha256',
  slack: 'X-Slack-Signature',
  slackTs: 'X-Slack-Request-Timestamp',
} as const;

interface Parsed {
  /** The presented signatures, each decoded to bytes. */
  signatures: Buffer[];
  /** The bytes that were signed, in parts (the body among them, never copied). */
  signed: (string | Buffer)[];
  /** Unix seconds, for timestamped presets. */
  timestampS?: number;
  /** Builds the HMAC key from a secret. */
  key: (secret: string) => Buffer | undefined;
}

type Failure = Extract<SignatureCheck, { ok: false }>;
const fail = (code: SignatureErrorCode, message: string): Failure => ({ ok: false, code, message });

/** The one value of a header: `Failure` when it is absent (missing) or sent more than once (bad). */
function one(headers: HeaderReader, name: string, shown: string): string | Failure {
  const v = headers(name);
  if (v === undefined || v.length === 0 || (v.length === 1 && v[0]!.trim() === ''))
    return fail('missing_signature', `missing signature: send the ${shown} header`);
  if (v.length > 1) return fail('bad_signature', `bad signature: the ${shown} header was sent ${v.length} times`);
  return v[0]!.trim();
}

const utf8Key = (secret: string): Buffer => Buffer.from(secret, 'utf8');

function parse(preset: SignaturePresetName, headers: HeaderReader, body: Buffer): Parsed | Failure {
  switch (preset) {
    case 'github': {
      const v = one(headers, 'x-hub-signature-256', SHOWN.github);
      if (typeof v !== 'string') return v;
      if (!v.startsWith('sha256=') || !HEX64.test(v.slice(7)))
        return fail('bad_signature', `bad signature: ${SHOWN.github} must be "sha256=" and 64 hex digits`);
      return { signatures: [Buffer.from(v.slice(7), 'hex')], signed: [body], key: utf8Key };
    }
    case 'shopify': {
      const v = one(headers, 'x-shopify-hmac-sha256', SHOWN.shopify);
      if (typeof v !== 'string') return v;
      if (v.length !== 44 || !BASE64.test(v)) return fail('bad_signature', `bad signature: ${SHOWN.shopify} must be the base64 of 32 bytes`);
      return { signatures: [Buffer.from(v, 'base64')], signed: [body], key: utf8Key };
    }
    case 'slack': {
      const v = one(headers, 'x-slack-signature', SHOWN.slack);
      if (typeof v !== 'string') return v;
      const ts = one(headers, 'x-slack-request-timestamp', SHOWN.slackTs);
      if (typeof ts !== 'string') return ts;
      if (!SECONDS.test(ts)) return fail('bad_signature', `bad signature: ${SHOWN.slackTs} must be Unix seconds`);
      if (!v.startsWith('v0=') || !HEX64.test(v.slice(3))) return fail('bad_signature', `bad signature: ${SHOWN.slack} must be "v0=" and 64 hex digits`);
      return { signatures: [Buffer.from(v.slice(3), 'hex')], signed: [`v0:${ts}:`, body], timestampS: Number(ts), key: utf8Key };
    }
    case 'stripe': {
      const v = one(headers, 'stripe-signature', SHOWN.stripe);
      if (typeof v !== 'string') return v;
      let t: string | undefined;
      const signatures: Buffer[] = [];
      for (const item of v.split(',')) {
        const eq = item.indexOf('=');
        const k = item.slice(0, eq).trim();
        const value = item.slice(eq + 1).trim();
        if (eq < 0) return fail('bad_signature', `bad signature: ${SHOWN.stripe} must be "t=<seconds>,v1=<hex>"`);
        if (k === 't') {
          if (t !== undefined || !SECONDS.test(value)) return fail('bad_signature', `bad signature: ${SHOWN.stripe} must hold one "t=" with Unix seconds`);
          t = value;
        } else if (k === 'v1') {
          if (!HEX64.test(value)) return fail('bad_signature', `bad signature: each v1 of ${SHOWN.stripe} must be 64 hex digits`);
          signatures.push(Buffer.from(value, 'hex'));
        } // v0 (test-mode legacy) and future schemes are ignored, as Stripe's libraries do.
      }
      if (t === undefined) return fail('bad_signature', `bad signature: ${SHOWN.stripe} has no "t=" timestamp`);
      if (signatures.length === 0) return fail('bad_signature', `bad signature: ${SHOWN.stripe} has no v1 signature`);
      if (signatures.length > MAX_LISTED) return fail('bad_signature', `bad signature: ${SHOWN.stripe} lists more than ${MAX_LISTED} signatures`);
      return { signatures, signed: [`${t}.`, body], timestampS: Number(t), key: utf8Key };
    }
    case 'standard-webhooks': {
      const id = one(headers, 'webhook-id', 'webhook-id');
      if (typeof id !== 'string') return id;
      const ts = one(headers, 'webhook-timestamp', 'webhook-timestamp');
      if (typeof ts !== 'string') return ts;
      const v = one(headers, 'webhook-signature', SHOWN.standard);
      if (typeof v !== 'string') return v;
      if (!SECONDS.test(ts)) return fail('bad_signature', 'bad signature: webhook-timestamp must be Unix seconds');
      if (id.length > 256 || !PRINTABLE.test(id)) return fail('bad_signature', 'bad signature: webhook-id must be 1 to 256 printable ASCII characters');
      const signatures: Buffer[] = [];
      for (const item of v.split(' ')) {
        if (item === '') continue;
        const comma = item.indexOf(',');
        if (comma < 0) return fail('bad_signature', `bad signature: ${SHOWN.standard} must be space-separated "v1,<base64>"`);
        if (item.slice(0, comma) !== 'v1') continue; // other versions (v1a: asymmetric) are not ours to check
        const b64 = item.slice(comma + 1);
        if (!BASE64.test(b64) || b64 === '') return fail('bad_signature', `bad signature: each v1 of ${SHOWN.standard} must be base64`);
        signatures.push(Buffer.from(b64, 'base64'));
      }
      if (signatures.length === 0) return fail('bad_signature', `bad signature: ${SHOWN.standard} has no v1 signature`);
      if (signatures.length > MAX_LISTED) return fail('bad_signature', `bad signature: ${SHOWN.standard} lists more than ${MAX_LISTED} signatures`);
      return { signatures, signed: [`${id}.${ts}.`, body], timestampS: Number(ts), key: standardKey };
    }
  }
}

function hmac(key: Buffer, parts: readonly (string | Buffer)[]): Buffer {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest();
}

/**
 * Checks a call signed with `preset`. `now` and `toleranceMs` bound the timestamp of timestamped presets;
 * `scope` (the workflow id) goes into the replay key so that equal signatures of two workflows never collide.
 */
export function verifySignature(
  preset: SignaturePresetName,
  secrets: SigningSecrets,
  request: { headers: HeaderReader; body: Buffer },
  options: { now: Date; toleranceMs: number; scope: string },
): SignatureCheck {
  const parsed = parse(preset, request.headers, request.body);
  if ('ok' in parsed) return parsed;
  const matches = (secret: string | undefined): Buffer | undefined => {
    if (secret === undefined) return undefined;
    const key = parsed.key(secret);
    if (key === undefined) return undefined;
    const expected = hmac(key, parsed.signed);
    let hit: Buffer | undefined;
    // Every listed signature is compared (no early exit); only their count and lengths show in the timing.
    for (const s of parsed.signatures) if (s.length === expected.length && timingSafeEqual(s, expected) && hit === undefined) hit = s;
    return hit;
  };
  const current = matches(secrets.current);
  const previous = matches(secrets.previous);
  const hit = current ?? previous;
  if (hit === undefined)
    return fail('bad_signature', `bad signature: the ${headerOf(preset)} signature does not match the body and the webhook's signing secret`);
  if (parsed.timestampS !== undefined) {
    const skewMs = Math.abs(options.now.getTime() - parsed.timestampS * 1000);
    if (skewMs > options.toleranceMs) {
      return fail(
        'stale_signature',
        `stale signature: its timestamp is ${Math.round(skewMs / 1000)} s from the gateway's clock, over the tolerance of ${Math.round(options.toleranceMs / 1000)} s`,
      );
    }
    const replayKey = createHash('sha256').update(`${options.scope}\0${preset}\0${parsed.timestampS}\0`).update(hit).digest('base64url');
    return { ok: true, matched: current ? 'current' : 'previous', replayKey };
  }
  return { ok: true, matched: current ? 'current' : 'previous' };
}

function headerOf(preset: SignaturePresetName): string {
  return preset === 'standard-webhooks' ? SHOWN.standard : SHOWN[preset];
}

/** Longest delivery id used for de-duplication (longer ones are not used). */
const MAX_DELIVERY_ID = 255;
const DELIVERY_ID = /^[\x21-\x7e][\x20-\x7e]*$/;

/**
 * The platform's id of one delivery (the same on its retries), for optional de-duplication: GitHub's
 * `X-GitHub-Delivery`, the Standard Webhooks `webhook-id`, Shopify's `X-Shopify-Webhook-Id`, the `id` of a
 * Stripe event and the `event_id` of a Slack event (both in the body). Undefined when the call has none.
 */
export function deliveryId(preset: SignaturePresetName, headers: HeaderReader, body: JsonValue): string | undefined {
  let id: unknown;
  const header = (name: string) => {
    const v = headers(name);
    return v?.length === 1 ? v[0]!.trim() : undefined;
  };
  const field = (name: string) => (body !== null && typeof body === 'object' && !Array.isArray(body) && Object.hasOwn(body, name) ? body[name] : undefined);
  switch (preset) {
    case 'github':
      id = header('x-github-delivery');
      break;
    case 'standard-webhooks':
      id = header('webhook-id');
      break;
    case 'shopify':
      id = header('x-shopify-webhook-id');
      break;
    case 'stripe':
      id = field('id');
      break;
    case 'slack':
      id = field('event_id');
      break;
  }
  return typeof id === 'string' && id.length <= MAX_DELIVERY_ID && DELIVERY_ID.test(id) ? `${preset}:${id}` : undefined;
}
