/**
 * Signed webhooks end to end (issue 12 item 1): a real nats-server and gateway, calls signed the way each
 * platform documents it (test/helpers/webhook-signing.ts). Valid, wrong secret, tampered body, stale
 * timestamp and replay for every preset; the platform's or a generated secret; rotation with a grace
 * period; bad settings; de-duplication on delivery ids; headers and method in the job; the secret never
 * in a job, a response, the stored record or a log line; a replay refused by another gateway.
 */
import { randomBytes } from 'node:crypto';
import { Kvm } from '@nats-io/kv';
import t, { type Test } from 'tap';
import { startGateway } from '../../gateway/index.js';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { KV_BUCKETS } from '../../src/nats/streams.js';
import { capturingLogger } from '../helpers/error-tables.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { type Preset, signedHeaders } from '../helpers/webhook-signing.js';
import { testClient, waitFor } from '../nats/util.js';
import { ADMIN_TOKEN, createWorkflow, gatewayFixture, hook, jobsOf, type Reply, rpc } from './harness.js';

const PRESETS: Preset[] = ['GITHUB', 'STRIPE', 'STANDARD_WEBHOOKS', 'SHOPIFY', 'SLACK'];
const TIMESTAMPED = new Set<Preset>(['STRIPE', 'STANDARD_WEBHOOKS', 'SLACK']);
const now = () => Math.floor(Date.now() / 1000);

/** A secret as the platform would show it. */
function platformSecret(preset: Preset): string {
  if (preset === 'STANDARD_WEBHOOKS') return `whsec_${randomBytes(24).toString('base64')}`;
  if (preset === 'STRIPE') return `whsec_${randomBytes(16).toString('hex')}`;
  return randomBytes(16).toString('hex');
}

t.test('signed webhooks', async (t) => {
  const captured = capturingLogger();
  const { base, nats, gateway } = await gatewayFixture(t, {}, {}, { log: captured.logger });
  const setAuth = (body: Record<string, unknown>) => rpc(base, 'SetWebhookAuthMethod', body);
  const post = (id: string, body: string, headers: Record<string, string>, contentType = 'application/json') =>
    hook(base, id, { body, headers: { 'content-type': contentType, ...headers } });
  const refused = (t: Test, r: Reply, code: string, what: string) => {
    t.equal(r.status, 400, what);
    t.equal(r.json?.error?.code, code, what);
  };
  const secretsSeen: string[] = [];

  await t.test('each preset: valid, wrong secret, tampered body, missing, stale, replay', async (t) => {
    for (const preset of PRESETS) {
      await t.test(preset, async (t) => {
        const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
        const secret = platformSecret(preset);
        secretsSeen.push(secret);
        const set = await setAuth({ workflowId: wf.id, authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: `SIGNATURE_PRESET_${preset}`, secret });
        t.equal(set.status, 200, set.text);
        t.same(
          { ...set.json.webhook, webhookId: undefined, url: undefined },
          { authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: `SIGNATURE_PRESET_${preset}`, hasSecret: true, webhookId: undefined, url: undefined },
          'the platform secret is not echoed back',
        );
        // Spacing and key order as the sender wrote them: the signature covers these exact bytes.
        const body = `{"id": "evt_${preset.toLowerCase()}",  "type":"ping", "n": 1}`;
        const signed = signedHeaders(preset, secret, body);
        const ok = await post(wf.id, body, signed);
        t.equal(ok.status, 202, ok.text);
        refused(t, await post(wf.id, body, signedHeaders(preset, platformSecret(preset), body)), 'bad_signature', 'wrong secret');
        refused(t, await post(wf.id, body.replace('"n": 1', '"n": 2'), signedHeaders(preset, secret, body)), 'bad_signature', 'tampered body');
        refused(t, await post(wf.id, body, {}), 'missing_signature', 'no signature');
        refused(t, await post(wf.id, body, { 'x-webhook-secret': secret }), 'missing_signature', 'the secret itself is not a signature');
        if (TIMESTAMPED.has(preset)) {
          const stale = await post(wf.id, body, signedHeaders(preset, secret, body, now() - 600));
          refused(t, stale, 'stale_signature', 'ten minutes old');
          t.match(stale.json.error.message, /^stale signature: its timestamp is 60\d s from the gateway's clock, over the tolerance of 300 s$/);
          const replay = await post(wf.id, body, signed);
          refused(t, replay, 'replayed_signature', 'the same signed call again');
          t.equal(replay.json.error.message, 'replayed signature: a call with this signature was already accepted; the sender must sign each delivery anew');
        }
        const jobs = await jobsOf(t, nats.url, wf.id);
        t.equal(jobs.length, 1, 'only the accepted call was queued');
        t.same(jobs[0]!.job.trigger.body, { id: `evt_${preset.toLowerCase()}`, type: 'ping', n: 1 });
        t.equal(jobs[0]!.job.trigger.method, 'POST');
        for (const h of ['x-hub-signature-256', 'stripe-signature', 'webhook-signature', 'x-shopify-hmac-sha256', 'x-slack-signature']) {
          t.notOk(h in jobs[0]!.job.trigger.headers, `${h} is not passed on`);
        }
        t.notMatch(JSON.stringify(jobs), secret, 'the secret is in no job');
      });
    }
  });

  await t.test('a generated signing secret; rotation and a new platform secret keep the old one for the grace period', async (t) => {
    const r = await rpc(base, 'CreateWorkflow', {
      name: 'gh',
      workspace: 'ws',
      nodes: [{ id: 'a', code: 'return 1' }],
      webhook: { authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB' },
    });
    t.equal(r.status, 200, r.text);
    const wf = r.json.workflow;
    const first: string = wf.webhook.secret;
    t.match(first, /^whsec_[A-Za-z0-9+/]{43}=$/, 'shown once, by the call that generated it');
    secretsSeen.push(first);
    const body = '{"zen":"Keep it logically awesome."}';
    t.equal((await post(wf.id, body, signedHeaders('GITHUB', first, body))).status, 202);
    const got = await rpc(base, 'GetWorkflow', { id: wf.id });
    t.equal(got.json.workflow.webhook.secret, undefined, 'never shown again');
    t.equal(got.json.workflow.webhook.signaturePreset, 'SIGNATURE_PRESET_GITHUB');

    const rotated = await rpc(base, 'RotateWebhookSecret', { workflowId: wf.id, gracePeriod: '3600s' });
    const second: string = rotated.json.webhook.secret;
    t.match(second, /^whsec_/);
    t.not(second, first);
    secretsSeen.push(second);
    t.ok(rotated.json.webhook.previousSecretExpiresAt, 'the previous secret has a deadline');
    t.equal((await post(wf.id, body, signedHeaders('GITHUB', second, body))).status, 202, 'the new secret');
    t.equal((await post(wf.id, body, signedHeaders('GITHUB', first, body))).status, 202, 'the old one in its grace period');

    const mine = "It's a Secret to Everybody";
    const set = await setAuth({ workflowId: wf.id, authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB', secret: mine });
    t.equal(set.status, 200, set.text);
    t.equal((await post(wf.id, body, signedHeaders('GITHUB', mine, body))).status, 202, "GitHub's documented secret");
    t.equal((await post(wf.id, body, signedHeaders('GITHUB', second, body))).status, 202, 'the replaced one for 24 h');
    refused(t, await post(wf.id, body, signedHeaders('GITHUB', first, body)), 'bad_signature', 'only one previous secret is kept');

    const header = await setAuth({ workflowId: wf.id, authMethod: 'AUTH_METHOD_HEADER' });
    t.match(header.json.webhook.secret, /^whsec_[A-Za-z0-9_-]{43}$/, 'the Header method gets its own (hashed) secret');
    refused(t, await post(wf.id, body, signedHeaders('GITHUB', mine, body)), 'missing_secret', 'signatures do not count with the Header method');
    const back = await setAuth({ workflowId: wf.id, authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB' });
    t.equal(back.json.webhook.secret, undefined, 'switching back keeps the signing secret: nothing generated');
    t.equal((await post(wf.id, body, signedHeaders('GITHUB', mine, body))).status, 202);
  });

  await t.test('bad settings are INVALID_ARGUMENT naming the field', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const bad = async (body: Record<string, unknown>, message: string | RegExp) => {
      const r = await setAuth({ workflowId: wf.id, ...body });
      t.equal(r.status, 400, JSON.stringify(body));
      t.equal(r.json.code, 'invalid_argument');
      if (typeof message === 'string') t.equal(r.json.message, message);
      else t.match(r.json.message, message);
    };
    await bad({ authMethod: 'AUTH_METHOD_SIGNATURE' }, 'signaturePreset is required with AUTH_METHOD_SIGNATURE');
    await bad({ authMethod: 'AUTH_METHOD_HEADER', signaturePreset: 'SIGNATURE_PRESET_GITHUB' }, 'signaturePreset is only used with AUTH_METHOD_SIGNATURE');
    await bad(
      { authMethod: 'AUTH_METHOD_HEADER', secret: 'x'.repeat(20) },
      'secret is only accepted with AUTH_METHOD_SIGNATURE: the secret of the other methods is generated (RotateWebhookSecret replaces it)',
    );
    await bad({ authMethod: 'AUTH_METHOD_NONE', deduplicateDeliveries: true }, 'deduplicateDeliveries is only used with AUTH_METHOD_SIGNATURE');
    await bad(
      { authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_STRIPE', secret: 'short' },
      'secret must be 16 to 1024 characters, got 5',
    );
    await bad(
      { authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_STANDARD_WEBHOOKS', secret: 'whsec_this is not base64!' },
      'a Standard Webhooks secret is "whsec_" and base64 (as the sender shows it)',
    );
    await bad({ authMethod: 'AUTH_METHOD_NONE', verifyToken: 'has space' }, 'verifyToken must be 1 to 256 printable ASCII characters without spaces');
    await bad({ authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_NOPE' }, /signaturePreset/);
    await bad({ authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB', secret: 12345 }, /secret/);
    t.equal(
      (await setAuth({ workflowId: wf.id, authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB', secret: 'a secret with spaces' }))
        .status,
      200,
    );
    await bad(
      { authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_STANDARD_WEBHOOKS' },
      `the webhook's signing secret does not suit standard-webhooks: a Standard Webhooks secret is "whsec_" and base64 (as the sender shows it); send the sender's secret in secret`,
    );
    const unknown = await setAuth({ workflowId: 'wf_00000000000000000000', authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB' });
    t.equal(unknown.status, 404);
  });

  await t.test('de-duplication on the platform delivery id, with the Idempotency-Key semantics', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const secret = platformSecret('GITHUB');
    const set = await setAuth({
      workflowId: wf.id,
      authMethod: 'AUTH_METHOD_SIGNATURE',
      signaturePreset: 'SIGNATURE_PRESET_GITHUB',
      secret,
      deduplicateDeliveries: true,
    });
    t.equal(set.json.webhook.deduplicateDeliveries, true);
    const body = '{"action":"opened"}';
    const send = (delivery: string, extra: Record<string, string> = {}) =>
      post(wf.id, body, { ...signedHeaders('GITHUB', secret, body), 'x-github-delivery': delivery, ...extra });
    const a = await send('72d3162e-cc78-11e3-81ab-4c9367dc0958');
    const again = await send('72d3162e-cc78-11e3-81ab-4c9367dc0958');
    t.equal(a.status, 202);
    t.same(again.json, a.json, "GitHub's redelivery of the same delivery: the first execution id");
    const other = await send('0b989ba4-242f-11e5-81e1-c7b6e4a22e31');
    t.not(other.json.executionId, a.json.executionId);
    const keyed = await send('72d3162e-cc78-11e3-81ab-4c9367dc0958', { 'idempotency-key': 'k1' });
    t.not(keyed.json.executionId, a.json.executionId, 'an Idempotency-Key header wins over the delivery id');
    t.equal((await jobsOf(t, nats.url, wf.id)).length, 3);

    const stripe = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const ss = platformSecret('STRIPE');
    await setAuth({
      workflowId: stripe.id,
      authMethod: 'AUTH_METHOD_SIGNATURE',
      signaturePreset: 'SIGNATURE_PRESET_STRIPE',
      secret: ss,
      deduplicateDeliveries: true,
    });
    const event = '{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"invoice.paid"}';
    const s1 = await post(stripe.id, event, signedHeaders('STRIPE', ss, event, now() - 5));
    const s2 = await post(stripe.id, event, signedHeaders('STRIPE', ss, event, now()));
    t.equal(s1.status, 202);
    t.same(s2.json, s1.json, "Stripe's retry (signed anew) of the same event: the first execution id");

    const plain = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    await setAuth({ workflowId: plain.id, authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB', secret });
    const h = { ...signedHeaders('GITHUB', secret, body), 'x-github-delivery': 'same' };
    const p1 = await post(plain.id, body, h);
    const p2 = await post(plain.id, body, h);
    t.not(p1.json.executionId, p2.json.executionId, 'off unless asked for: a redelivery runs again');
  });

  await t.test('headers and method reach the job; credentials never do; oversized headers are refused', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const r = await hook(base, wf.id, {
      body: { a: 1 },
      headers: {
        'X-GitHub-Event': 'pull_request',
        'X-Custom': 'one',
        Authorization: 'Bearer leaked',
        Cookie: 'session=leaked',
        'Proxy-Authorization': 'Basic leaked',
        'X-Webhook-Secret': 'leaked',
        'X-Hub-Signature-256': 'sha256=leaked',
        'X-Hub-Signature': 'sha1=leaked',
        'Stripe-Signature': 't=1,v1=leaked',
        'Webhook-Signature': 'v1,leaked',
        'X-Shopify-Hmac-Sha256': 'leaked',
        'X-Slack-Signature': 'v0=leaked',
      },
    });
    t.equal(r.status, 202);
    const [job] = await jobsOf(t, nats.url, wf.id);
    const headers = job!.job.trigger.headers;
    t.equal(headers['x-github-event'], 'pull_request', 'lower-case names');
    t.equal(headers['x-custom'], 'one');
    t.equal(headers['content-type'], 'application/json');
    t.equal(job!.job.trigger.method, 'POST');
    t.notMatch(JSON.stringify(job), /leaked/, 'no credential or signature header is passed on');
    const big = await hook(base, wf.id, { body: {}, headers: { 'x-big': 'x'.repeat(20_000) } });
    t.equal(big.status, 431, 'headers over the server limit: 431 from the HTTP layer');
  });

  await t.test('a replay is refused by another gateway too (the record is in NATS, not in one process)', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const secret = platformSecret('SLACK');
    await setAuth({ workflowId: wf.id, authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_SLACK', secret });
    const second = await startGateway(
      loadGatewayConfig({
        LDBOX_GATEWAY_PORT: '0',
        LDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
        NATS_URL: nats.url,
        LDBOX_WEBHOOK_RATE: '0',
        LDBOX_DATA_KEY: TEST_DATA_KEY,
      }),
      silentLogger(),
      { nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50, connectTimeoutMs: 1000 } },
    );
    t.teardown(() => second.close(2000));
    const base2 = `http://127.0.0.1:${second.port}`;
    await waitFor(async () => second.ready() && (await hook(base2, wf.id, { method: 'GET' })).status === 405, 15_000, 'the second gateway knows the workflow');
    const body = '{"type":"event_callback","event_id":"Ev08MFMKH6","event":{"type":"app_mention"}}';
    const signed = signedHeaders('SLACK', secret, body);
    t.equal((await post(wf.id, body, signed)).status, 202, 'first gateway');
    const r = await hook(base2, wf.id, { body, headers: { 'content-type': 'application/json', ...signed } });
    refused(t, r, 'replayed_signature', 'second gateway');
    t.equal(gateway.ready(), true);
  });

  await t.test('the signing secret is never shown, stored in plaintext, queued or logged', async (t) => {
    const client = testClient(t, nats.url, 'ldbox-test-kv');
    const nc = await client.whenConnected();
    const kv = await new Kvm(nc).open(KV_BUCKETS.workflows);
    const stored: string[] = [];
    for await (const key of await kv.keys()) {
      const e = await kv.get(key);
      if (e) stored.push(e.string());
    }
    await client.close(200);
    const all = stored.join('\n');
    t.match(all, /"signing":\{"preset":"github","secret":"ldbox:v1:/, 'sealed at rest');
    const listed = (await rpc(base, 'ListWorkflows', {})).text;
    const logs = JSON.stringify(captured.lines());
    t.ok(secretsSeen.length >= 7);
    for (const secret of secretsSeen) {
      t.notOk(all.includes(secret), 'not in the stored workflows');
      t.notOk(listed.includes(secret), 'not in ListWorkflows');
      t.notOk(logs.includes(secret), 'not in any log line');
    }
    t.notOk(all.includes("It's a Secret to Everybody"));
  });
});
