/**
 * Webhook secrets and authentication methods (src/workflows/webhook-secret.ts): generation, hashing,
 * constant-time verification, rotation with a grace period (on an injected clock), method transitions
 * (generated when first selected, kept when switched), warnings, and request authentication where only
 * the active method's channel counts.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { isWorkflowValidationError } from '../../src/workflows/validation-error.js';
import {
  authenticateWebhookRequest,
  createWebhookAuth,
  DEFAULT_SECRET_GRACE_MS,
  generateWebhookSecret,
  hashWebhookSecret,
  isWebhookSecretFormat,
  MAX_SECRET_GRACE_MS,
  methodNeedsSecret,
  previousSecretExpiry,
  resolveGracePeriodMs,
  rotateWebhookSecret,
  secretChannel,
  setWebhookAuthMethod,
  verifyWebhookSecret,
  type WebhookAuthMethod,
  type WebhookAuthState,
  webhookAuthWarnings,
} from '../../src/workflows/webhook-secret.js';

const HOUR = 60 * 60 * 1000;
const T0 = new Date('2025-03-01T12:00:00.000Z');
const at = (ms: number): Date => new Date(T0.getTime() + ms);

/** A deterministic random source: each call gives `size` bytes of the next counter value. */
function counterRandom(): (size: number) => Buffer {
  let n = 0;
  return (size) => Buffer.alloc(size, ++n);
}

const noSecret = (method: WebhookAuthMethod): WebhookAuthState => ({ method, secretHash: null, previousSecretHash: null, previousSecretExpiresAt: null });

t.test('generate: whsec_ + 32 random bytes in base64url', async (t) => {
  const s = generateWebhookSecret();
  t.match(s, /^whsec_[A-Za-z0-9_-]{43}$/);
  t.equal(Buffer.from(s.slice(6), 'base64url').length, 32);
  t.ok(isWebhookSecretFormat(s));
  const many = new Set(Array.from({ length: 1000 }, () => generateWebhookSecret()));
  t.equal(many.size, 1000, 'no repeats');
  t.equal(
    generateWebhookSecret(() => Buffer.alloc(32, 0xff)),
    `whsec_${Buffer.alloc(32, 0xff).toString('base64url')}`,
    'uses the random source',
  );
  t.throws(() => generateWebhookSecret(() => Buffer.alloc(16)), { message: 'random source gave 16 bytes, not 32' });
  t.notOk(isWebhookSecretFormat('whsec_short'));
  t.notOk(isWebhookSecretFormat(`sk_${'a'.repeat(43)}`));
});

t.test('hash: SHA-256 hex of the UTF-8 secret', async (t) => {
  const s = 'whsec_example';
  t.equal(hashWebhookSecret(s), createHash('sha256').update(s).digest('hex'));
  t.match(hashWebhookSecret(s), /^[0-9a-f]{64}$/);
  t.not(hashWebhookSecret(s), hashWebhookSecret(`${s} `));
});

t.test('verify: current, previous in grace, or nothing', async (t) => {
  const secret = generateWebhookSecret();
  const state: WebhookAuthState = { method: 'header', secretHash: hashWebhookSecret(secret), previousSecretHash: null, previousSecretExpiresAt: null };
  t.equal(verifyWebhookSecret(state, secret, T0), 'current');
  t.equal(verifyWebhookSecret(state, `${secret}x`, T0), undefined, 'longer');
  t.equal(verifyWebhookSecret(state, secret.slice(0, -1), T0), undefined, 'shorter');
  t.equal(verifyWebhookSecret(state, '', T0), undefined, 'empty');
  t.equal(verifyWebhookSecret(state, secret.toUpperCase(), T0), undefined, 'case matters');
  t.equal(verifyWebhookSecret(state, hashWebhookSecret(secret), T0), undefined, 'the hash itself is not the secret');
  t.equal(verifyWebhookSecret(noSecret('header'), secret, T0), undefined, 'no secret stored');
  t.equal(verifyWebhookSecret({ ...state, secretHash: 'not-a-hash' }, secret, T0), undefined, 'a corrupt stored hash matches nothing');
});

t.test('transitions: a secret is generated when a method other than none is first selected', async (t) => {
  const random = counterRandom();
  for (const method of ['legacy', 'header', 'query'] as const) {
    const { state, secret } = createWebhookAuth(method, random);
    t.ok(secret !== undefined && isWebhookSecretFormat(secret), `${method}: a secret is generated`);
    t.equal(state.method, method);
    t.equal(state.secretHash, hashWebhookSecret(secret!), `${method}: only its hash is stored`);
    t.same(webhookAuthWarnings(state), [], `${method}: no warning`);
  }
  const none = createWebhookAuth('none', random);
  t.equal(none.secret, undefined, 'none: no secret');
  t.same(none.state, noSecret('none'));
  t.same(webhookAuthWarnings(none.state), [], 'none: no warning');

  // none → header: generated now, once.
  const toHeader = setWebhookAuthMethod(none.state, 'header', random);
  t.ok(toHeader.secret !== undefined, 'none → header generates');
  t.equal(toHeader.state.secretHash, hashWebhookSecret(toHeader.secret!));
  // header → query → none → legacy → header: the same secret throughout, never shown again.
  let state = toHeader.state;
  for (const method of ['query', 'none', 'legacy', 'header', 'header'] as const) {
    const change = setWebhookAuthMethod(state, method, random);
    t.equal(change.secret, undefined, `→ ${method}: no new secret`);
    t.equal(change.state.method, method);
    t.equal(change.state.secretHash, toHeader.state.secretHash, `→ ${method}: secret kept`);
    state = change.state;
  }
  t.equal(verifyWebhookSecret(state, toHeader.secret!, T0), 'current', 'the first secret still works');
});

t.test('transitions keep a previous secret in its grace period', async (t) => {
  const first = createWebhookAuth('header');
  const rotated = rotateWebhookSecret(first.state, { now: T0 });
  const switched = setWebhookAuthMethod(rotated.state, 'query').state;
  t.equal(switched.previousSecretHash, first.state.secretHash);
  t.equal(verifyWebhookSecret(switched, first.secret!, at(HOUR)), 'previous');
});

t.test('warnings: a method that needs a secret and has none', async (t) => {
  t.same(webhookAuthWarnings(noSecret('header')), [
    'the Header authentication method needs a secret and the webhook has none: every call is refused until one is generated with RotateWebhookSecret',
  ]);
  t.same(webhookAuthWarnings(noSecret('query')), [
    'the Query parameter authentication method needs a secret and the webhook has none: every call is refused until one is generated with RotateWebhookSecret',
  ]);
  t.same(webhookAuthWarnings(noSecret('legacy')), [
    'the webhook uses the legacy query-parameter authentication but has no secret: anyone with the URL can start the workflow; select an authentication method or rotate the secret to generate one',
  ]);
  t.same(webhookAuthWarnings(noSecret('none')), []);
  // Selecting a method on such a webhook generates the secret, and the warning goes away.
  const fixed = setWebhookAuthMethod(noSecret('legacy'), 'header');
  t.ok(fixed.secret);
  t.same(webhookAuthWarnings(fixed.state), []);
  // So does a rotation, which keeps the method.
  const rotated = rotateWebhookSecret(noSecret('legacy'), { now: T0 });
  t.equal(rotated.state.method, 'legacy');
  t.same(webhookAuthWarnings(rotated.state), []);
  t.equal(rotated.state.previousSecretHash, null, 'nothing to keep as previous');
});

t.test('rotation: new secret, the old one valid until the grace deadline', async (t) => {
  const { state, secret: oldSecret } = createWebhookAuth('header');
  const r = rotateWebhookSecret(state, { now: T0 });
  t.ok(isWebhookSecretFormat(r.secret));
  t.not(r.secret, oldSecret);
  t.same(r.state, {
    method: 'header',
    secretHash: hashWebhookSecret(r.secret),
    previousSecretHash: state.secretHash,
    previousSecretExpiresAt: '2025-03-02T12:00:00.000Z',
  });
  t.equal(DEFAULT_SECRET_GRACE_MS, 24 * HOUR, 'default grace: 24 h');
  t.equal(verifyWebhookSecret(r.state, r.secret, T0), 'current');
  t.equal(verifyWebhookSecret(r.state, oldSecret!, T0), 'previous', 'old secret at once');
  t.equal(verifyWebhookSecret(r.state, oldSecret!, at(24 * HOUR - 1)), 'previous', '1 ms before the deadline');
  t.equal(verifyWebhookSecret(r.state, oldSecret!, at(24 * HOUR)), undefined, 'at the deadline: expired');
  t.equal(verifyWebhookSecret(r.state, oldSecret!, at(48 * HOUR)), undefined, 'later');
  t.equal(verifyWebhookSecret(r.state, r.secret, at(48 * HOUR)), 'current', 'the new one keeps working');
  t.same(previousSecretExpiry(r.state, T0), new Date('2025-03-02T12:00:00.000Z'));
  t.equal(previousSecretExpiry(r.state, at(24 * HOUR)), undefined, 'no expiry shown once expired');
});

t.test('rotation: custom and zero grace; only one previous secret', async (t) => {
  const { state, secret: s1 } = createWebhookAuth('query');
  const short = rotateWebhookSecret(state, { now: T0, graceMs: 60_000 });
  t.equal(short.state.previousSecretExpiresAt, '2025-03-01T12:01:00.000Z');
  t.equal(verifyWebhookSecret(short.state, s1!, at(59_999)), 'previous');
  t.equal(verifyWebhookSecret(short.state, s1!, at(60_000)), undefined);

  const zero = rotateWebhookSecret(state, { now: T0, graceMs: 0 });
  t.equal(zero.state.previousSecretHash, null, 'zero grace keeps nothing');
  t.equal(zero.state.previousSecretExpiresAt, null);
  t.equal(verifyWebhookSecret(zero.state, s1!, T0), undefined, 'the old secret stops at once');

  const r2 = rotateWebhookSecret(state, { now: T0 });
  const r3 = rotateWebhookSecret(r2.state, { now: at(HOUR) });
  t.equal(verifyWebhookSecret(r3.state, s1!, at(HOUR)), undefined, 'the secret before the previous one is dropped at the next rotation');
  t.equal(verifyWebhookSecret(r3.state, r2.secret, at(HOUR)), 'previous');
  t.equal(r3.state.previousSecretExpiresAt, '2025-03-02T13:00:00.000Z', 'the grace runs from the new rotation');
  t.equal(verifyWebhookSecret(r3.state, r3.secret, at(HOUR)), 'current');
});

t.test('rotation on a webhook without authentication keeps the method', async (t) => {
  const r = rotateWebhookSecret(noSecret('none'), { now: T0 });
  t.equal(r.state.method, 'none');
  t.equal(r.state.secretHash, hashWebhookSecret(r.secret));
  const toHeader = setWebhookAuthMethod(r.state, 'header');
  t.equal(toHeader.secret, undefined, 'the rotated secret is used when a method is selected later');
  t.equal(verifyWebhookSecret(toHeader.state, r.secret, T0), 'current');
});

t.test('grace period bounds', async (t) => {
  t.equal(resolveGracePeriodMs(undefined), DEFAULT_SECRET_GRACE_MS);
  t.equal(resolveGracePeriodMs(0), 0);
  t.equal(resolveGracePeriodMs(MAX_SECRET_GRACE_MS), MAX_SECRET_GRACE_MS);
  for (const [ms, message] of [
    [-1000, 'gracePeriod must be from 0s to 2592000s (30 days), got -1s'],
    [MAX_SECRET_GRACE_MS + 1000, 'gracePeriod must be from 0s to 2592000s (30 days), got 2592001s'],
    [Number.NaN, 'gracePeriod must be from 0s to 2592000s (30 days), got NaNs'],
  ] as const) {
    let caught: unknown;
    try {
      resolveGracePeriodMs(ms);
    } catch (err) {
      caught = err;
    }
    t.ok(isWorkflowValidationError(caught), `${ms}: a validation error`);
    t.equal((caught as Error).message, message);
  }
  t.throws(() => rotateWebhookSecret(noSecret('header'), { now: T0, graceMs: -1 }), { name: 'WorkflowValidationError' });
});

t.test('the plaintext secret is never stored', async (t) => {
  const { state, secret } = createWebhookAuth('header');
  const rotated = rotateWebhookSecret(state, { now: T0 });
  for (const s of [state, rotated.state]) {
    const json = JSON.stringify(s);
    t.notOk(json.includes(secret!.slice(6)), 'first secret absent');
    t.notOk(json.includes(rotated.secret.slice(6)), 'rotated secret absent');
  }
});

t.test('methods and channels', async (t) => {
  t.same(
    (['legacy', 'none', 'header', 'query'] as const).map((m) => [m, methodNeedsSecret(m), secretChannel(m)]),
    [
      ['legacy', true, 'query'],
      ['none', false, undefined],
      ['header', true, 'header'],
      ['query', true, 'query'],
    ],
  );
});

t.test("authenticate a request: only the active method's channel counts", async (t) => {
  const { state: headerState, secret } = createWebhookAuth('header');
  const s = secret!;
  const queryState = setWebhookAuthMethod(headerState, 'query').state;
  const legacyState = setWebhookAuthMethod(headerState, 'legacy').state;
  const noneState = setWebhookAuthMethod(headerState, 'none').state;

  t.same(authenticateWebhookRequest(headerState, { header: s }, T0), { ok: true, matched: 'current' });
  t.same(
    authenticateWebhookRequest(headerState, { query: s }, T0),
    {
      ok: false,
      reason: 'missing',
      message: 'missing webhook secret: send it in the X-Webhook-Secret header',
    },
    'header method: the query secret does not count',
  );
  t.same(
    authenticateWebhookRequest(headerState, { header: 'wrong', query: s }, T0),
    {
      ok: false,
      reason: 'invalid',
      message: 'invalid webhook secret in the X-Webhook-Secret header',
    },
    'header method: a wrong header is not saved by a right query',
  );
  t.same(
    authenticateWebhookRequest(headerState, { header: '' }, T0),
    {
      ok: false,
      reason: 'missing',
      message: 'missing webhook secret: send it in the X-Webhook-Secret header',
    },
    'empty header = missing',
  );

  for (const [name, state] of [
    ['query', queryState],
    ['legacy', legacyState],
  ] as const) {
    t.same(authenticateWebhookRequest(state, { query: s }, T0), { ok: true, matched: 'current' }, `${name}: query secret`);
    t.same(authenticateWebhookRequest(state, { query: [s] }, T0), { ok: true, matched: 'current' }, `${name}: a one-element array`);
    t.same(
      authenticateWebhookRequest(state, { header: s }, T0),
      {
        ok: false,
        reason: 'missing',
        message: 'missing webhook secret: send it in the "secret" query parameter',
      },
      `${name}: the header does not count`,
    );
    t.same(
      authenticateWebhookRequest(state, { query: 'nope', header: s }, T0),
      {
        ok: false,
        reason: 'invalid',
        message: 'invalid webhook secret in the "secret" query parameter',
      },
      `${name}: wrong query secret`,
    );
    t.same(
      authenticateWebhookRequest(state, { query: [s, s] }, T0),
      {
        ok: false,
        reason: 'invalid',
        message: 'invalid webhook secret: the "secret" query parameter was sent 2 times',
      },
      `${name}: repeated parameter`,
    );
    t.same(
      authenticateWebhookRequest(state, { query: [] }, T0),
      {
        ok: false,
        reason: 'missing',
        message: 'missing webhook secret: send it in the "secret" query parameter',
      },
      `${name}: empty array`,
    );
  }

  t.same(authenticateWebhookRequest(noneState, {}, T0), { ok: true, matched: 'not-required' }, 'none: nothing needed');
  t.same(authenticateWebhookRequest(noneState, { header: 'garbage', query: 'garbage' }, T0), { ok: true, matched: 'not-required' }, 'none: anything ignored');

  t.same(authenticateWebhookRequest(noSecret('legacy'), {}, T0), { ok: true, matched: 'not-required' }, 'legacy without a secret: open (with a warning)');
  t.same(
    authenticateWebhookRequest(noSecret('header'), { header: 'anything' }, T0),
    {
      ok: false,
      reason: 'invalid',
      message: 'invalid webhook secret in the X-Webhook-Secret header',
    },
    'header without a secret: every call refused',
  );

  const rotated = rotateWebhookSecret(headerState, { now: T0 });
  t.same(authenticateWebhookRequest(rotated.state, { header: s }, at(HOUR)), { ok: true, matched: 'previous' }, 'previous secret in grace');
  t.same(
    authenticateWebhookRequest(rotated.state, { header: s }, at(25 * HOUR)),
    {
      ok: false,
      reason: 'invalid',
      message: 'invalid webhook secret in the X-Webhook-Secret header',
    },
    'previous secret after grace',
  );
  for (const r of [authenticateWebhookRequest(headerState, { header: `${s}x` }, T0), authenticateWebhookRequest(queryState, { query: `${s}x` }, T0)]) {
    t.notOk(JSON.stringify(r).includes(s), 'messages never contain the secret');
  }
});
