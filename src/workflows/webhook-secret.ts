/**
 * Webhook secrets and authentication methods (spec: "Webhook trigger", "Authentication → Webhook
 * endpoint"; docs/design.md, decisions "auth method unset", "secret", "header and query secret both sent").
 *
 * - A secret is `whsec_` + 32 random bytes in base64url. Only its SHA-256 (lowercase hex) is stored; the
 *   plaintext is handed back once, by the function that generated it, and never logged or kept.
 * - Methods: `legacy` (unset: the query parameter `secret`, with the existing secret), `none`, `header`
 *   (`X-Webhook-Secret`), `query` (`secret=`). Selecting any method but `none` generates a secret when
 *   the webhook has none; an existing secret is kept across switches (also through `none`).
 * - Rotation replaces the secret; the replaced one stays valid until a grace deadline (default 24 h).
 *   Only one previous secret is kept.
 * - Checking hashes the presented secret and compares the hashes with `timingSafeEqual`, so neither the
 *   secret's length nor its content shows in the timing.
 * - `signature` (issue 12): the sender signs the body (webhook-signature.ts). Its signing secret is needed
 *   in plaintext to compute the HMAC, so it is kept apart from the hashed secret, in `signing`, as plaintext
 *   in memory and sealed with the data key at rest (src/store/workflow-codec.ts). It is the platform's
 *   (`secret`) or generated; it rotates with a grace period like the hashed one and is kept across switches.
 * - `verifyTokenHash`: Meta's verify token for its subscription handshake, stored as SHA-256 only.
 *
 * Tests: test/workflows/webhook-secret.test.ts.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { WorkflowValidationError } from './validation-error.js';
import { generateSigningSecret, type SignaturePresetName, type SigningSecrets, signingSecretProblem } from './webhook-signature.js';

/** How a webhook caller authenticates. `legacy` is the proto's AUTH_METHOD_UNSPECIFIED. */
export type WebhookAuthMethod = 'legacy' | 'none' | 'header' | 'query' | 'signature';

/** The signing state of a webhook (method `signature`). The secrets are plaintext here, sealed at rest. */
export interface WebhookSigning {
  preset: SignaturePresetName;
  secret: string;
  /** The secret replaced last, while in its grace period; null when none. */
  previousSecret: string | null;
  /** ISO-8601 instant until which `previousSecret` is accepted (exclusive); null with it. */
  previousSecretExpiresAt: string | null;
  /** De-duplicate calls on the platform's delivery id (webhook-signature.ts deliveryId). */
  deduplicate: boolean;
}

/** The stored authentication state of a webhook: hashes only, never a plaintext secret. */
export interface WebhookAuthState {
  method: WebhookAuthMethod;
  /** SHA-256 of the current secret, 64 lowercase hex digits; null when the webhook has no secret. */
  secretHash: string | null;
  /** SHA-256 of the secret replaced by the last rotation; null when none is in its grace period. */
  previousSecretHash: string | null;
  /** ISO-8601 instant until which `previousSecretHash` is accepted (exclusive); null with it. */
  previousSecretExpiresAt: string | null;
  /** The signing secret and preset; absent until `signature` was first selected, kept across switches. */
  signing?: WebhookSigning;
  /** SHA-256 (hex) of Meta's verify token; absent when none is set. */
  verifyTokenHash?: string;
}

/** The outcome of a change: the new state, and the plaintext secret when the change generated one. */
export interface WebhookAuthChange {
  state: WebhookAuthState;
  /** The new plaintext secret, to be shown once in the response; undefined when none was generated. */
  secret: string | undefined;
}

/** Source of random bytes; tests may pass their own. */
export type RandomBytes = (size: number) => Buffer;

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Bytes of randomness in a secret. */
export const WEBHOOK_SECRET_BYTES = 32;
/** How long a rotated-out secret stays valid unless the rotation says otherwise. */
export const DEFAULT_SECRET_GRACE_MS = 24 * 60 * 60 * 1000;
/** The longest grace period a rotation may ask for. */
export const MAX_SECRET_GRACE_MS = 30 * 24 * 60 * 60 * 1000;
/** The header of the `header` method (spec). */
export const WEBHOOK_SECRET_HEADER = 'X-Webhook-Secret';
/** The query parameter of the `query` and `legacy` methods (spec). */
export const WEBHOOK_SECRET_QUERY_PARAMETER = 'secret';

const SECRET_FORMAT = /^whsec_[A-Za-z0-9_-]{43}$/;
const HASH_FORMAT = /^[0-9a-f]{64}$/;

/** A new secret: `whsec_` and 43 base64url characters (32 random bytes). */
export function generateWebhookSecret(random: RandomBytes = randomBytes): string {
  const bytes = random(WEBHOOK_SECRET_BYTES);
  if (bytes.length !== WEBHOOK_SECRET_BYTES) throw new Error(`random source gave ${bytes.length} bytes, not ${WEBHOOK_SECRET_BYTES}`);
  return WEBHOOK_SECRET_PREFIX + bytes.toString('base64url');
}

/** True when `s` has the format of a generated secret. */
export function isWebhookSecretFormat(s: string): boolean {
  return SECRET_FORMAT.test(s);
}

/** The stored form of a secret: SHA-256 of its UTF-8 bytes, lowercase hex. */
export function hashWebhookSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** The longest verify token (Meta's handshake). */
export const MAX_VERIFY_TOKEN_CHARS = 256;

/** True for the methods whose requests must carry the secret. */
export function methodNeedsSecret(method: WebhookAuthMethod): boolean {
  return method !== 'none';
}

/** Where the method expects the secret: a header, the query, or nowhere. */
export function secretChannel(method: WebhookAuthMethod): 'header' | 'query' | 'signature' | undefined {
  if (method === 'header') return 'header';
  if (method === 'query' || method === 'legacy') return 'query';
  if (method === 'signature') return 'signature';
  return undefined;
}

/** Compares a presented secret with a stored hash in constant time (hash both, then timingSafeEqual). */
function matchesHash(presentedHash: Buffer, storedHash: string | null): boolean {
  if (storedHash === null || !HASH_FORMAT.test(storedHash)) return false;
  return timingSafeEqual(presentedHash, Buffer.from(storedHash, 'hex'));
}

/** Whether the previous secret is still in its grace period at `now`. */
function previousValid(state: WebhookAuthState, now: Date): boolean {
  if (state.previousSecretHash === null || state.previousSecretExpiresAt === null) return false;
  return now.getTime() < Date.parse(state.previousSecretExpiresAt);
}

/**
 * Which stored secret `presented` is: the current one, the previous one (in its grace period at `now`),
 * or neither (undefined). Works whatever the method; see {@link authenticateWebhookRequest} for a request.
 */
export function verifyWebhookSecret(state: WebhookAuthState, presented: string, now: Date): 'current' | 'previous' | undefined {
  const presentedHash = createHash('sha256').update(presented, 'utf8').digest();
  // Both comparisons always run, so the timing does not say which one matched.
  const current = matchesHash(presentedHash, state.secretHash);
  const previous = matchesHash(presentedHash, state.previousSecretHash) && previousValid(state, now);
  if (current) return 'current';
  if (previous) return 'previous';
  return undefined;
}

/**
 * The state of a new webhook. Every method but `none` gets a generated secret, `legacy` (unset) too: a
 * new webhook has no existing secret for the legacy query-parameter behaviour to keep.
 */
export function createWebhookAuth(method: WebhookAuthMethod, random: RandomBytes = randomBytes): WebhookAuthChange {
  const empty: WebhookAuthState = { method, secretHash: null, previousSecretHash: null, previousSecretExpiresAt: null };
  return setWebhookAuthMethod(empty, method, random);
}

/**
 * Selects `method`. When it needs a secret and the webhook has none, one is generated (and returned);
 * otherwise the secret, and a previous one in its grace period, are kept as they are.
 */
export function setWebhookAuthMethod(state: WebhookAuthState, method: WebhookAuthMethod, random: RandomBytes = randomBytes): WebhookAuthChange {
  if (method === 'signature') {
    if (!state.signing) throw new WorkflowValidationError('signaturePreset', 'signaturePreset is required with AUTH_METHOD_SIGNATURE');
    return { state: { ...state, method }, secret: undefined };
  }
  if (methodNeedsSecret(method) && state.secretHash === null) {
    const secret = generateWebhookSecret(random);
    return { state: { ...state, method, secretHash: hashWebhookSecret(secret) }, secret };
  }
  return { state: { ...state, method }, secret: undefined };
}

/** What SetWebhookAuthMethod asks for, beyond the method (the proto's fields, checked here). */
export interface WebhookAuthSettings {
  method: WebhookAuthMethod;
  /** Required with `signature`, refused with the other methods. */
  preset?: SignaturePresetName | undefined;
  /** The platform's signing secret (`signature` only); empty or undefined: keep or generate. */
  secret?: string | undefined;
  /** Meta's verify token; empty or undefined keeps the current one. */
  verifyToken?: string | undefined;
  /** `signature` only. */
  deduplicate?: boolean | undefined;
}

/**
 * Applies SetWebhookAuthMethod. With `signature`: the preset is set, the given secret checked against it and
 * made current (the replaced one kept for the default grace period), or — with none given — the current
 * signing secret kept (it must suit the preset) or one generated and returned. Throws a
 * WorkflowValidationError naming the field.
 */
export function applyWebhookAuthSettings(
  state: WebhookAuthState,
  settings: WebhookAuthSettings,
  options: { now: Date; random?: RandomBytes },
): WebhookAuthChange {
  const random = options.random ?? randomBytes;
  const { method, preset } = settings;
  const secret = settings.secret ?? '';
  if (method !== 'signature') {
    if (preset !== undefined) throw new WorkflowValidationError('signaturePreset', 'signaturePreset is only used with AUTH_METHOD_SIGNATURE');
    if (secret !== '') {
      throw new WorkflowValidationError(
        'secret',
        'secret is only accepted with AUTH_METHOD_SIGNATURE: the secret of the other methods is generated (RotateWebhookSecret replaces it)',
      );
    }
    if (settings.deduplicate) throw new WorkflowValidationError('deduplicateDeliveries', 'deduplicateDeliveries is only used with AUTH_METHOD_SIGNATURE');
  }
  const verifyToken = settings.verifyToken ?? '';
  if (verifyToken !== '' && (verifyToken.length > MAX_VERIFY_TOKEN_CHARS || !/^[\x21-\x7e]+$/.test(verifyToken))) {
    throw new WorkflowValidationError('verifyToken', `verifyToken must be 1 to ${MAX_VERIFY_TOKEN_CHARS} printable ASCII characters without spaces`);
  }
  const withToken = (s: WebhookAuthState): WebhookAuthState => (verifyToken === '' ? s : { ...s, verifyTokenHash: hashWebhookSecret(verifyToken) });
  if (method !== 'signature') {
    const change = setWebhookAuthMethod(state, method, random);
    return { state: withToken(change.state), secret: change.secret };
  }
  if (preset === undefined) throw new WorkflowValidationError('signaturePreset', 'signaturePreset is required with AUTH_METHOD_SIGNATURE');
  if (secret !== '') {
    const problem = signingSecretProblem(preset, secret);
    if (problem !== undefined) throw new WorkflowValidationError('secret', problem);
  }
  const old = state.signing;
  let signing: WebhookSigning;
  let generated: string | undefined;
  if (secret === '' && old === undefined) {
    generated = generateSigningSecret(random);
    signing = { preset, secret: generated, previousSecret: null, previousSecretExpiresAt: null, deduplicate: false };
  } else if (old === undefined) {
    signing = { preset, secret, previousSecret: null, previousSecretExpiresAt: null, deduplicate: false };
  } else if (secret === '' || secret === old.secret) {
    const problem = signingSecretProblem(preset, old.secret);
    if (problem !== undefined) {
      throw new WorkflowValidationError('secret', `the webhook's signing secret does not suit ${preset}: ${problem}; send the sender's secret in secret`);
    }
    signing = { ...old, preset };
  } else {
    signing = { ...replaceSigningSecret(old, secret, options.now, DEFAULT_SECRET_GRACE_MS), preset };
  }
  signing.deduplicate = settings.deduplicate === true;
  return { state: withToken({ ...state, method, signing }), secret: generated };
}

/** `signing` with `secret` current and the replaced one valid until `now + graceMs` (not at all for 0). */
function replaceSigningSecret(signing: WebhookSigning, secret: string, now: Date, graceMs: number): WebhookSigning {
  const keep = graceMs > 0;
  return {
    ...signing,
    secret,
    previousSecret: keep ? signing.secret : null,
    previousSecretExpiresAt: keep ? new Date(now.getTime() + graceMs).toISOString() : null,
  };
}

/** The signing secrets valid at `now` (the previous one only in its grace period); undefined without `signing`. */
export function signingSecrets(state: WebhookAuthState, now: Date): SigningSecrets | undefined {
  const s = state.signing;
  if (!s) return undefined;
  const previousValid = s.previousSecret !== null && s.previousSecretExpiresAt !== null && now.getTime() < Date.parse(s.previousSecretExpiresAt);
  return { current: s.secret, previous: previousValid ? s.previousSecret! : undefined };
}

/** True when `presented` is the webhook's verify token (constant time); false when it has none. */
export function verifyTokenMatches(state: WebhookAuthState, presented: string): boolean {
  const stored = state.verifyTokenHash;
  const presentedHash = createHash('sha256').update(presented, 'utf8').digest();
  return stored !== undefined && HASH_FORMAT.test(stored) && timingSafeEqual(presentedHash, Buffer.from(stored, 'hex'));
}

/**
 * Checks a rotation's grace period in milliseconds: undefined means {@link DEFAULT_SECRET_GRACE_MS};
 * 0 to {@link MAX_SECRET_GRACE_MS} are accepted. Throws a WorkflowValidationError on `gracePeriod`.
 */
export function resolveGracePeriodMs(graceMs: number | undefined): number {
  if (graceMs === undefined) return DEFAULT_SECRET_GRACE_MS;
  if (!Number.isFinite(graceMs) || graceMs < 0 || graceMs > MAX_SECRET_GRACE_MS) {
    throw new WorkflowValidationError('gracePeriod', `gracePeriod must be from 0s to ${MAX_SECRET_GRACE_MS / 1000}s (30 days), got ${graceMs / 1000}s`);
  }
  return Math.floor(graceMs);
}

/**
 * Replaces the secret with a new one. The replaced secret stays valid until `now + graceMs` (not at all
 * for 0); a previous secret still in its grace period is dropped (only one is kept). With no secret yet,
 * this simply generates one. The method does not change.
 */
export function rotateWebhookSecret(
  state: WebhookAuthState,
  options: { now: Date; graceMs?: number; random?: RandomBytes },
): WebhookAuthChange & { secret: string } {
  const graceMs = resolveGracePeriodMs(options.graceMs);
  if (state.method === 'signature' && state.signing) {
    // The signing secret is what a signature webhook uses: it is the one replaced.
    const secret = generateSigningSecret(options.random ?? randomBytes);
    return { state: { ...state, signing: replaceSigningSecret(state.signing, secret, options.now, graceMs) }, secret };
  }
  const secret = generateWebhookSecret(options.random ?? randomBytes);
  const keepPrevious = state.secretHash !== null && graceMs > 0;
  return {
    state: {
      ...state,
      secretHash: hashWebhookSecret(secret),
      previousSecretHash: keepPrevious ? state.secretHash : null,
      previousSecretExpiresAt: keepPrevious ? new Date(options.now.getTime() + graceMs).toISOString() : null,
    },
    secret,
  };
}

/** The end of the previous secret's grace period, when it is still valid at `now`. */
export function previousSecretExpiry(state: WebhookAuthState, now: Date): Date | undefined {
  if (state.method === 'signature' && state.signing) {
    const s = state.signing;
    return signingSecrets(state, now)?.previous !== undefined ? new Date(s.previousSecretExpiresAt!) : undefined;
  }
  return previousValid(state, now) ? new Date(state.previousSecretExpiresAt!) : undefined;
}

/** Whether the active method has its secret (the signing secret for `signature`). */
export function hasActiveSecret(state: WebhookAuthState): boolean {
  return state.method === 'signature' ? state.signing !== undefined : state.secretHash !== null;
}

/** Validation warnings of the settings (spec: "an empty secret gives a validation warning"). */
export function webhookAuthWarnings(state: WebhookAuthState): string[] {
  if (state.secretHash !== null) return [];
  switch (state.method) {
    case 'legacy':
      return [
        'the webhook uses the legacy query-parameter authentication but has no secret: anyone with the URL can start the workflow; select an authentication method or rotate the secret to generate one',
      ];
    case 'header':
    case 'query':
      return [
        `the ${state.method === 'header' ? 'Header' : 'Query parameter'} authentication method needs a secret and the webhook has none: every call is refused until one is generated with RotateWebhookSecret`,
      ];
    default:
      return [];
  }
}

/** What a webhook call presented: the `X-Webhook-Secret` header and the `secret` query parameter. */
export interface PresentedSecrets {
  header?: string | undefined;
  /** An array when the parameter was repeated. */
  query?: string | readonly string[] | undefined;
}

/** The outcome of {@link authenticateWebhookRequest}. Messages never contain a secret. */
export type WebhookAuthResult = { ok: true; matched: 'current' | 'previous' | 'not-required' } | { ok: false; reason: 'missing' | 'invalid'; message: string };

/**
 * Authenticates a webhook call (answer 400 with `message` when not ok). Only the active method's channel
 * counts: with `header` a `secret` query parameter is ignored and the other way round. A `legacy` webhook
 * without a secret accepts every call ("the secret is validated if one is configured"); a `header` or
 * `query` webhook without a secret refuses every call.
 */
export function authenticateWebhookRequest(state: WebhookAuthState, presented: PresentedSecrets, now: Date): WebhookAuthResult {
  const channel = secretChannel(state.method);
  if (channel === undefined) return { ok: true, matched: 'not-required' };
  // A signed webhook is checked over its body (verifySignature); never accepted here.
  if (channel === 'signature') return { ok: false, reason: 'invalid', message: 'this webhook checks signatures over the body' };
  if (state.method === 'legacy' && state.secretHash === null) return { ok: true, matched: 'not-required' };
  const where = channel === 'header' ? `the ${WEBHOOK_SECRET_HEADER} header` : `the "${WEBHOOK_SECRET_QUERY_PARAMETER}" query parameter`;
  let raw = channel === 'header' ? presented.header : presented.query;
  if (Array.isArray(raw) && raw.length === 1) raw = raw[0] as string;
  if (raw === undefined || raw === '' || (Array.isArray(raw) && raw.length === 0)) {
    return { ok: false, reason: 'missing', message: `missing webhook secret: send it in ${where}` };
  }
  if (typeof raw !== 'string') {
    return { ok: false, reason: 'invalid', message: `invalid webhook secret: ${where} was sent ${raw.length} times` };
  }
  const matched = verifyWebhookSecret(state, raw, now);
  if (matched === undefined) return { ok: false, reason: 'invalid', message: `invalid webhook secret in ${where}` };
  return { ok: true, matched };
}
