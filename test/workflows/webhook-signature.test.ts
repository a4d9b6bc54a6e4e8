/**
 * Signature presets (src/workflows/webhook-signature.ts) against the vectors the platforms publish, and
 * signatures computed the way each platform documents it: valid, wrong secret, tampered body, stale
 * timestamp, garbage headers; secret checks; delivery ids.
 */
import { createHmac } from 'node:crypto';
import t from 'tap';
import {
  deliveryId,
  generateSigningSecret,
  type HeaderReader,
  type SignaturePresetName,
  signingSecretProblem,
  verifySignature,
} from '../../src/workflows/webhook-signature.js';

const reader =
  (h: Record<string, string | string[]>): HeaderReader =>
  (name) => {
    const v = h[name];
    return v === undefined ? undefined : Array.isArray(v) ? v : [v];
  };
const TOL = 5 * 60_000;
const check = (preset: SignaturePresetName, secret: string, h: Record<string, string | string[]>, body: string, nowS: number, previous?: string) =>
  verifySignature(
    preset,
    { current: secret, previous },
    { headers: reader(h), body: Buffer.from(body, 'utf8') },
    { now: new Date(nowS * 1000), toleranceMs: TOL, scope: 'wf_x' },
  );

t.test('published vectors', async (t) => {
  // docs.github.com "Validating webhook deliveries" → "Testing the webhook payload validation".
  t.match(
    check(
      'github',
      "It's a Secret to Everybody",
      { 'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' },
      'Hello, World!',
      0,
    ),
    { ok: true, matched: 'current' },
    'GitHub',
  );
  // The Standard Webhooks specification's example (standardwebhooks.com, spec "Verifying signatures").
  t.match(
    check(
      'standard-webhooks',
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      {
        'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        'webhook-timestamp': '1614265330',
        'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
      },
      '{"test": 2432232314}',
      1614265330 + 10,
    ),
    { ok: true, matched: 'current', replayKey: /^[A-Za-z0-9_-]{43}$/ },
    'Standard Webhooks',
  );
  // api.slack.com "Verifying requests from Slack" worked example.
  const slackBody =
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
  t.match(
    check(
      'slack',
      '8f742231b10e8888abcd99yyyzzz85a5',
      { 'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503', 'x-slack-request-timestamp': '1531420618' },
      slackBody,
      1531420618,
    ),
    { ok: true },
    'Slack',
  );
});

/** Signs `body` for `preset` the way the platform documents it. */
function sign(preset: SignaturePresetName, secret: string, body: string, ts: number, id = 'msg_1'): Record<string, string> {
  const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();
  switch (preset) {
    case 'github':
      return { 'x-hub-signature-256': `sha256=${hmac(secret, body).toString('hex')}` };
    case 'shopify':
      return { 'x-shopify-hmac-sha256': hmac(secret, body).toString('base64') };
    case 'stripe':
      return { 'stripe-signature': `t=${ts},v1=${hmac(secret, `${ts}.${body}`).toString('hex')},v0=${'0'.repeat(64)}` };
    case 'slack':
      return { 'x-slack-signature': `v0=${hmac(secret, `v0:${ts}:${body}`).toString('hex')}`, 'x-slack-request-timestamp': String(ts) };
    case 'standard-webhooks':
      return {
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': `v1,${hmac(Buffer.from(secret.slice(6), 'base64'), `${id}.${ts}.${body}`).toString('base64')}`,
      };
  }
}

const PRESETS: SignaturePresetName[] = ['github', 'stripe', 'standard-webhooks', 'shopify', 'slack'];
const TIMESTAMPED = new Set<SignaturePresetName>(['stripe', 'standard-webhooks', 'slack']);

t.test('each preset: valid, wrong secret, tampered body, stale and future timestamps, previous secret', async (t) => {
  const now = 1_800_000_000;
  const body = '{"id":"evt_1","n":1}';
  for (const preset of PRESETS) {
    await t.test(preset, async (t) => {
      const secret = generateSigningSecret();
      const other = generateSigningSecret();
      t.equal(signingSecretProblem(preset, secret), undefined, 'a generated secret suits every preset');
      const ok = check(preset, secret, sign(preset, secret, body, now), body, now);
      t.match(ok, { ok: true, matched: 'current' });
      t.equal('replayKey' in ok, TIMESTAMPED.has(preset), 'a replay key only for timestamped presets');
      t.match(check(preset, secret, sign(preset, other, body, now), body, now), { ok: false, code: 'bad_signature' }, 'wrong secret');
      t.match(check(preset, secret, sign(preset, secret, body, now), body.replace('1}', '2}'), now), { ok: false, code: 'bad_signature' }, 'tampered body');
      t.match(check(preset, other, sign(preset, secret, body, now), body, now, secret), { ok: true, matched: 'previous' }, 'the previous secret');
      if (TIMESTAMPED.has(preset)) {
        const stale = check(preset, secret, sign(preset, secret, body, now - 301), body, now);
        t.same(stale, {
          ok: false,
          code: 'stale_signature',
          message: "stale signature: its timestamp is 301 s from the gateway's clock, over the tolerance of 300 s",
        });
        t.match(check(preset, secret, sign(preset, secret, body, now + 301), body, now), { ok: false, code: 'stale_signature' }, 'from the future');
        t.match(check(preset, secret, sign(preset, secret, body, now - 299), body, now), { ok: true }, 'within the tolerance');
        const a = check(preset, secret, sign(preset, secret, body, now), body, now) as { replayKey: string };
        const b = check(preset, secret, sign(preset, secret, body, now + 1), body, now) as { replayKey: string };
        t.not(a.replayKey, b.replayKey, 'another timestamp is another signed call');
      }
      t.match(check(preset, secret, {}, body, now), { ok: false, code: 'missing_signature' }, 'no header');
    });
  }
});

t.test('garbage and repeated signature headers: 400 with a message that names the header, never the value', async (t) => {
  const s = 'x'.repeat(32);
  const cases: [SignaturePresetName, Record<string, string | string[]>, string][] = [
    ['github', { 'x-hub-signature-256': 'sha1=abc' }, 'bad signature: X-Hub-Signature-256 must be "sha256=" and 64 hex digits'],
    ['github', { 'x-hub-signature-256': `sha256=${'z'.repeat(64)}` }, 'bad signature: X-Hub-Signature-256 must be "sha256=" and 64 hex digits'],
    ['github', { 'x-hub-signature-256': ['sha256=a', 'sha256=b'] }, 'bad signature: the X-Hub-Signature-256 header was sent 2 times'],
    ['github', { 'x-hub-signature-256': '  ' }, 'missing signature: send the X-Hub-Signature-256 header'],
    ['shopify', { 'x-shopify-hmac-sha256': '%%%' }, 'bad signature: X-Shopify-Hmac-Sha256 must be the base64 of 32 bytes'],
    ['stripe', { 'stripe-signature': 'garbage' }, 'bad signature: Stripe-Signature must be "t=<seconds>,v1=<hex>"'],
    ['stripe', { 'stripe-signature': `t=abc,v1=${'0'.repeat(64)}` }, 'bad signature: Stripe-Signature must hold one "t=" with Unix seconds'],
    ['stripe', { 'stripe-signature': `v1=${'0'.repeat(64)}` }, 'bad signature: Stripe-Signature has no "t=" timestamp'],
    ['stripe', { 'stripe-signature': 't=1,v0=x' }, 'bad signature: Stripe-Signature has no v1 signature'],
    [
      'stripe',
      {
        'stripe-signature': `t=1,${Array(9)
          .fill(`v1=${'0'.repeat(64)}`)
          .join(',')}`,
      },
      'bad signature: Stripe-Signature lists more than 8 signatures',
    ],
    ['slack', { 'x-slack-signature': 'v0=1' }, 'missing signature: send the X-Slack-Request-Timestamp header'],
    ['slack', { 'x-slack-signature': 'v0=1', 'x-slack-request-timestamp': 'soon' }, 'bad signature: X-Slack-Request-Timestamp must be Unix seconds'],
    ['slack', { 'x-slack-signature': 'v1=1', 'x-slack-request-timestamp': '1' }, 'bad signature: X-Slack-Signature must be "v0=" and 64 hex digits'],
    ['standard-webhooks', { 'webhook-id': 'a', 'webhook-timestamp': '1' }, 'missing signature: send the webhook-signature header'],
    [
      'standard-webhooks',
      { 'webhook-id': 'a', 'webhook-timestamp': '1', 'webhook-signature': 'v1' },
      'bad signature: webhook-signature must be space-separated "v1,<base64>"',
    ],
    [
      'standard-webhooks',
      { 'webhook-id': 'a', 'webhook-timestamp': '1', 'webhook-signature': 'v1,!!' },
      'bad signature: each v1 of webhook-signature must be base64',
    ],
    [
      'standard-webhooks',
      { 'webhook-id': 'a', 'webhook-timestamp': '1', 'webhook-signature': 'v1a,AAAA' },
      'bad signature: webhook-signature has no v1 signature',
    ],
    [
      'standard-webhooks',
      { 'webhook-id': 'a', 'webhook-timestamp': '-1', 'webhook-signature': 'v1,AAAA' },
      'bad signature: webhook-timestamp must be Unix seconds',
    ],
  ];
  for (const [preset, headers, message] of cases) {
    const r = check(preset, s, headers, '{}', 1);
    t.same(
      r,
      { ok: false, code: message.startsWith('missing') ? 'missing_signature' : 'bad_signature', message },
      `${preset} ${JSON.stringify(headers).slice(0, 60)}`,
    );
  }
});

t.test('signing secrets a platform generated', async (t) => {
  t.equal(signingSecretProblem('github', "It's a Secret to Everybody"), undefined, 'spaces are fine (GitHub)');
  t.equal(signingSecretProblem('stripe', 'short'), 'secret must be 16 to 1024 characters, got 5');
  t.equal(signingSecretProblem('slack', `${'a'.repeat(20)}\n`), 'secret must be printable ASCII');
  t.equal(signingSecretProblem('standard-webhooks', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'), undefined);
  t.equal(signingSecretProblem('standard-webhooks', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'), undefined, 'the prefix is optional');
  t.equal(signingSecretProblem('standard-webhooks', 'whsec_not base64 at all!!'), 'a Standard Webhooks secret is "whsec_" and base64 (as the sender shows it)');
  t.equal(signingSecretProblem('standard-webhooks', 'whsec_AAAAAAAAAAAAAAAA'), 'a Standard Webhooks secret decodes to 24 to 64 bytes, got 12');
  t.match(generateSigningSecret(), /^whsec_[A-Za-z0-9+/]{43}=$/);
});

t.test('delivery ids', async (t) => {
  const h = reader({ 'x-github-delivery': 'd1', 'webhook-id': 'msg_1', 'x-shopify-webhook-id': 's1' });
  t.equal(deliveryId('github', h, {}), 'github:d1');
  t.equal(deliveryId('standard-webhooks', h, {}), 'standard-webhooks:msg_1');
  t.equal(deliveryId('shopify', h, {}), 'shopify:s1');
  t.equal(deliveryId('stripe', h, { id: 'evt_1' }), 'stripe:evt_1');
  t.equal(deliveryId('slack', h, { event_id: 'Ev1' }), 'slack:Ev1');
  t.equal(deliveryId('stripe', h, [{ id: 'evt_1' }]), undefined, 'not from an array');
  t.equal(deliveryId('stripe', h, { id: 7 }), undefined, 'not a number');
  t.equal(deliveryId('github', reader({}), {}), undefined);
  t.equal(deliveryId('github', reader({ 'x-github-delivery': 'x'.repeat(300) }), {}), undefined, 'too long');
});
