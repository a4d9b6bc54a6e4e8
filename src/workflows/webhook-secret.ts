/**
 * Webhook secrets and authentication methods (spec: "Webhook trigger", "Authentication → Webhook
 * endpoint"; DESIGN.md, decisions "auth method unset", "secret", "header and query secret both sent").
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
 *
 * Tests: test/workflows/webhook-secret.test.ts.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { WorkflowValidationError } from './validation-error.js';

/** How a webhook caller authenticates. `legacy` is the proto's AUTH_METHOD_UNSPECIFIED. */
export type WebhookAuthMethod = 'legacy' | 'none' | 'header' | 'query';

/** The stored authentication state of a webhook: hashes only, never a plaintext secret. */
export interface WebhookAuthState {
  method: WebhookAuthMethod;
  /** SHA-256 of the current secret, 64 lowercase hex digits; null when the webhook has no secret. */
  secretHash: string | null;
  /** SHA-256 of the secret replaced by the last rotation; null when none is in its grace period. */
  previousSecretHash: string | null;
  /** ISO-8601 instant until which `previousSecretHash` is accepted (exclusive); null with it. */
  previousSecretExpiresAt: string | null;
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

/** True for the methods whose requests must carry the secret. */
export function methodNeedsSecret(method: WebhookAuthMethod): boolean {
  return method !== 'none';
}

/** Where the method expects the secret: a header, the query, or nowhere. */
export function secretChannel(method: WebhookAuthMethod): 'header' | 'query' | undefined {
  if (method === 'header') return 'header';
  if (method === 'query' || method === 'legacy') return 'query';
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
  if (methodNeedsSecret(method) && state.secretHash === null) {
    const secret = generateWebhookSecret(random);
    return { state: { ...state, method, secretHash: hashWebhookSecret(secret) }, secret };
  }
  return { state: { ...state, method }, secret: undefined };
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
  const secret = generateWebhookSecret(options.random ?? randomBytes);
  const keepPrevious = state.secretHash !== null && graceMs > 0;
  return {
    state: {
      method: state.method,
      secretHash: hashWebhookSecret(secret),
      previousSecretHash: keepPrevious ? state.secretHash : null,
      previousSecretExpiresAt: keepPrevious ? new Date(options.now.getTime() + graceMs).toISOString() : null,
    },
    secret,
  };
}

/** The end of the previous secret's grace period, when it is still valid at `now`. */
export function previousSecretExpiry(state: WebhookAuthState, now: Date): Date | undefined {
  return previousValid(state, now) ? new Date(state.previousSecretExpiresAt!) : undefined;
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
