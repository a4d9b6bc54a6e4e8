/**
 * Webhook authentication end to end (spec: "Authentication → Webhook endpoint"; docs/design.md "auth method
 * unset", "secret", "header and query secret both sent"): each method with the right, a wrong and no
 * secret, in the active channel and in the other one; switching methods keeps the secret; rotation.
 */
import t, { type Test } from 'tap';
import { createWorkflow, gatewayFixture, hook, jobsOf, rpc } from './harness.js';

const SECRET_FORMAT = /^whsec_[A-Za-z0-9_-]{43}$/;
const WRONG = 'whsec_' + 'A'.repeat(43);

t.test('webhook authentication', async (t) => {
  const { base, nats } = await gatewayFixture(t);

  const missing = (t: Test, r: { status: number; json: any }, where: string) => {
    t.equal(r.status, 400);
    t.same(r.json, { error: { code: 'missing_secret', message: `missing webhook secret: send it in ${where}` } });
  };
  const invalid = (t: Test, r: { status: number; json: any }, where: string) => {
    t.equal(r.status, 400);
    t.same(r.json, { error: { code: 'invalid_secret', message: `invalid webhook secret in ${where}` } });
  };
  const HEADER = 'the X-Webhook-Secret header';
  const QUERY = 'the "secret" query parameter';

  await t.test('header method', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_HEADER' });
    t.equal(wf.webhook.authMethod, 'AUTH_METHOD_HEADER');
    t.match(wf.webhook.secret, SECRET_FORMAT, 'CreateWorkflow shows the secret once');
    const secret: string = wf.webhook.secret;
    const ok = await hook(base, wf.id, { headers: { 'x-webhook-secret': secret }, body: { a: 1 } });
    t.equal(ok.status, 202);
    t.match(ok.json, { executionId: /^ex_[0-9a-z]{26}$/ });
    t.same(Object.keys(ok.json), ['executionId']);
    invalid(t, await hook(base, wf.id, { headers: { 'x-webhook-secret': WRONG } }), HEADER);
    invalid(t, await hook(base, wf.id, { headers: { 'x-webhook-secret': secret.slice(0, -1) } }), HEADER);
    missing(t, await hook(base, wf.id, {}), HEADER);
    missing(t, await hook(base, wf.id, { query: `secret=${secret}` }), HEADER);
    t.equal((await jobsOf(t, nats.url, wf.id)).length, 1, 'only the accepted call was queued');
  });

  await t.test('query parameter method', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_QUERY_PARAMETER' });
    const secret: string = wf.webhook.secret;
    t.match(secret, SECRET_FORMAT);
    t.equal((await hook(base, wf.id, { query: `secret=${encodeURIComponent(secret)}&keep=1` })).status, 202);
    invalid(t, await hook(base, wf.id, { query: `secret=${WRONG}` }), QUERY);
    missing(t, await hook(base, wf.id, { query: 'secret=' }), QUERY);
    missing(t, await hook(base, wf.id, {}), QUERY);
    missing(t, await hook(base, wf.id, { headers: { 'x-webhook-secret': secret } }), QUERY);
    const twice = await hook(base, wf.id, { query: `secret=${secret}&secret=${secret}` });
    t.equal(twice.status, 400);
    t.same(twice.json, { error: { code: 'invalid_secret', message: `invalid webhook secret: ${QUERY} was sent 2 times` } });
    const jobs = await jobsOf(t, nats.url, wf.id);
    t.equal(jobs.length, 1);
    t.same(jobs[0]!.job.trigger.query, { keep: '1' }, 'the secret is never passed on');
  });

  await t.test('no authentication', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    t.equal(wf.webhook.secret, undefined, 'no secret generated');
    t.equal(wf.webhook.hasSecret, undefined);
    t.equal((await hook(base, wf.id, {})).status, 202);
    t.equal((await hook(base, wf.id, { query: `secret=${WRONG}`, headers: { 'x-webhook-secret': WRONG } })).status, 202, 'secrets are ignored');
    const jobs = await jobsOf(t, nats.url, wf.id);
    t.equal(jobs.length, 2);
    t.same(jobs[1]!.job.trigger.query, {}, 'the secret parameter is dropped even when no method uses it');
  });

  await t.test('unset method = legacy query parameter', async (t) => {
    const wf = await createWorkflow(base);
    t.equal(wf.webhook.authMethod, undefined, 'AUTH_METHOD_UNSPECIFIED is the zero value (omitted in JSON)');
    const secret: string = wf.webhook.secret;
    t.match(secret, SECRET_FORMAT);
    t.equal((await hook(base, wf.id, { query: `secret=${secret}` })).status, 202);
    invalid(t, await hook(base, wf.id, { query: `secret=${WRONG}` }), QUERY);
    missing(t, await hook(base, wf.id, {}), QUERY);
    missing(t, await hook(base, wf.id, { headers: { 'x-webhook-secret': secret } }), QUERY);
  });

  await t.test('switching methods keeps the secret', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_HEADER' });
    const secret: string = wf.webhook.secret;
    const toQuery = await rpc(base, 'SetWebhookAuthMethod', { workflowId: wf.id, authMethod: 'AUTH_METHOD_QUERY_PARAMETER' });
    t.equal(toQuery.status, 200);
    t.same(
      toQuery.json.webhook,
      {
        webhookId: wf.webhook.webhookId,
        url: `${base}/api/hooks/workflows/${wf.id}`,
        authMethod: 'AUTH_METHOD_QUERY_PARAMETER',
        hasSecret: true,
      },
      'no new secret shown: the existing one is kept',
    );
    t.equal((await hook(base, wf.id, { query: `secret=${secret}` })).status, 202, 'the same secret works in the query');
    missing(t, await hook(base, wf.id, { headers: { 'x-webhook-secret': secret } }), QUERY);

    const toNone = await rpc(base, 'SetWebhookAuthMethod', { workflowId: wf.id, authMethod: 'AUTH_METHOD_NONE' });
    t.equal(toNone.json.webhook.authMethod, 'AUTH_METHOD_NONE');
    t.equal(toNone.json.webhook.hasSecret, true, 'kept through NONE');
    t.equal((await hook(base, wf.id, {})).status, 202);

    const back = await rpc(base, 'SetWebhookAuthMethod', { workflowId: wf.id, authMethod: 'AUTH_METHOD_HEADER' });
    t.equal(back.json.webhook.secret, undefined);
    t.equal((await hook(base, wf.id, { headers: { 'x-webhook-secret': secret } })).status, 202, 'the original secret still works');
    missing(t, await hook(base, wf.id, {}), HEADER);

    const get = await rpc(base, 'GetWorkflow', { id: wf.id });
    t.equal(get.status, 200);
    t.equal(get.json.workflow.webhook.secret, undefined, 'GetWorkflow never shows the secret');
    t.notMatch(get.text, /whsec_|secretHash|[0-9a-f]{64}/, 'neither the secret nor its hash leaves');

    const none = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const gen = await rpc(base, 'SetWebhookAuthMethod', { workflowId: none.id, authMethod: 'AUTH_METHOD_HEADER' });
    t.match(gen.json.webhook.secret, SECRET_FORMAT, 'selecting a method on a webhook without a secret generates one, shown once');
    t.equal((await hook(base, none.id, { headers: { 'x-webhook-secret': gen.json.webhook.secret } })).status, 202);
  });

  await t.test('rotation: the new secret works, the old one during the grace period only', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_HEADER' });
    const old: string = wf.webhook.secret;
    const rot = await rpc(base, 'RotateWebhookSecret', { workflowId: wf.id });
    t.equal(rot.status, 200);
    const fresh: string = rot.json.webhook.secret;
    t.match(fresh, SECRET_FORMAT);
    t.not(fresh, old);
    t.type(rot.json.webhook.previousSecretExpiresAt, 'string');
    t.equal((await hook(base, wf.id, { headers: { 'x-webhook-secret': fresh } })).status, 202);
    t.equal((await hook(base, wf.id, { headers: { 'x-webhook-secret': old } })).status, 202, 'old secret in its grace period');

    const hard = await rpc(base, 'RotateWebhookSecret', { workflowId: wf.id, gracePeriod: '0s' });
    t.equal(hard.status, 200);
    invalid(t, await hook(base, wf.id, { headers: { 'x-webhook-secret': fresh } }), HEADER);
    t.equal((await hook(base, wf.id, { headers: { 'x-webhook-secret': hard.json.webhook.secret } })).status, 202);
  });
});
