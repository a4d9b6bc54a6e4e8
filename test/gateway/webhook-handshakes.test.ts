/**
 * Handshakes (issue 12 item 3): Slack's `url_verification` (signed), Meta's `GET ?hub.mode=subscribe` with
 * the workflow's verify token, Microsoft Graph's `validationToken`. Each is answered 200 and starts no
 * execution; a wrong token or an unsigned Slack challenge is refused.
 */
import t from 'tap';
import { signedHeaders } from '../helpers/webhook-signing.js';
import { createWorkflow, gatewayFixture, hook, jobsOf, rpc } from './harness.js';

t.test('handshakes', async (t) => {
  const { base, nats } = await gatewayFixture(t);

  await t.test('Slack url_verification with a valid signature: 200 {"challenge"}, no execution', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const secret = '8f742231b10e8888abcd99yyyzzz85a5';
    const set = await rpc(base, 'SetWebhookAuthMethod', {
      workflowId: wf.id,
      authMethod: 'AUTH_METHOD_SIGNATURE',
      signaturePreset: 'SIGNATURE_PRESET_SLACK',
      secret,
    });
    t.equal(set.status, 200, set.text);
    // The body Slack sends (api.slack.com/events/url_verification).
    const body = '{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}';
    const r = await hook(base, wf.id, { body, headers: { 'content-type': 'application/json', ...signedHeaders('SLACK', secret, body) } });
    t.equal(r.status, 200);
    t.same(r.json, { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    t.match(r.headers.get('content-type'), /^application\/json/);
    const unsigned = await hook(base, wf.id, { body, headers: { 'content-type': 'application/json' } });
    t.equal(unsigned.status, 400);
    t.equal(unsigned.json.error.code, 'missing_signature', 'no challenge without a valid signature');
    const forged = await hook(base, wf.id, {
      body,
      headers: { 'content-type': 'application/json', ...signedHeaders('SLACK', 'another-secret-of-32-characters!', body) },
    });
    t.equal(forged.json.error.code, 'bad_signature');
    const event = '{"type":"event_callback","event_id":"Ev1","event":{"type":"message","text":"hi"}}';
    const ev = await hook(base, wf.id, { body: event, headers: { 'content-type': 'application/json', ...signedHeaders('SLACK', secret, event) } });
    t.equal(ev.status, 202, 'other events run the workflow');
    const jobs = await jobsOf(t, nats.url, wf.id);
    t.equal(jobs.length, 1, 'the challenge started nothing');
    t.equal(jobs[0]!.job.trigger.body.event_id, 'Ev1');
  });

  await t.test("Meta's subscription GET with the verify token: 200 with the challenge as text", async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const set = await rpc(base, 'SetWebhookAuthMethod', {
      workflowId: wf.id,
      authMethod: 'AUTH_METHOD_SIGNATURE',
      signaturePreset: 'SIGNATURE_PRESET_GITHUB',
      secret: 'meta-app-secret-0123456789abcdef',
      verifyToken: 'meta-verify-token-1',
    });
    t.equal(set.json.webhook.hasVerifyToken, true);
    const get = (query: string) => hook(base, wf.id, { method: 'GET', query });
    const ok = await get('hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meta-verify-token-1');
    t.equal(ok.status, 200);
    t.equal(ok.text, '1158201444');
    t.equal(ok.headers.get('content-type'), 'text/plain; charset=utf-8');
    t.equal(ok.headers.get('x-content-type-options'), 'nosniff');
    const wrong = await get('hub.mode=subscribe&hub.challenge=1&hub.verify_token=nope');
    t.same([wrong.status, wrong.json], [400, { error: { code: 'invalid_verify_token', message: "hub.verify_token is not the webhook's verify token" } }]);
    const missing = await get('hub.mode=subscribe&hub.verify_token=meta-verify-token-1');
    t.same([missing.status, missing.json.error.code], [400, 'invalid_handshake']);
    const mode = await get('hub.mode=unsubscribe&hub.challenge=1&hub.verify_token=meta-verify-token-1');
    t.same([mode.status, mode.json.error.message], [400, 'hub.mode must be "subscribe"']);
    t.equal((await get('a=1')).status, 405, 'any other GET is still 405');
    t.equal((await hook(base, 'wf_00000000000000000000', { method: 'GET', query: 'hub.mode=subscribe' })).status, 404, 'unknown workflow');
    const none = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const noToken = await hook(base, none.id, { method: 'GET', query: 'hub.mode=subscribe&hub.challenge=1&hub.verify_token=x' });
    t.same(noToken.json, { error: { code: 'invalid_verify_token', message: 'the webhook has no verify token: set verifyToken with SetWebhookAuthMethod' } });
    t.equal((await jobsOf(t, nats.url, wf.id)).length, 0, 'no execution');
  });

  await t.test("Microsoft Graph's validationToken: 200 text/plain with the token, no execution", async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_HEADER' });
    const token = 'Validation: Testing client application reachability for subscription Request-Id: 5f2d0b54-7f3e-4d0f-9b9b-3c1f0a1b2c3d';
    const r = await hook(base, wf.id, { query: `validationToken=${encodeURIComponent(token)}`, body: '', headers: { 'content-type': 'text/plain' } });
    t.equal(r.status, 200);
    t.equal(r.text, token, 'the token decoded, as Graph expects');
    t.equal(r.headers.get('content-type'), 'text/plain; charset=utf-8');
    const twice = await hook(base, wf.id, { query: 'validationToken=a&validationToken=b', body: '' });
    t.same([twice.status, twice.json.error.code], [400, 'invalid_handshake']);
    t.equal((await jobsOf(t, nats.url, wf.id)).length, 0, 'no execution');
  });
});
