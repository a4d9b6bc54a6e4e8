/**
 * What a node sees (issue 12 items 2 and 3), through the gateway, the executor and a real runner: headers
 * (`{{trigger.output.headers.x-github-event}}`) and the method in templates, a JSON array body and a text
 * body; the stored execution's trigger has headers and method, and never a credential or the signing secret.
 */
import t from 'tap';
import { signedHeaders } from '../helpers/webhook-signing.js';
import { hook, rpc } from '../gateway/harness.js';
import { createFlow, sharedRunner, stackFixture, waitForFinish } from './harness.js';

// The file's runner, a process of its own (harness.ts: one in this process runs under tap's slow module loader).
const runner = sharedRunner(t);

t.test('headers, method, arrays and text reach the nodes', async (t) => {
  const { base } = await stackFixture(t, { runner: await runner() });
  const wf = await createFlow(base, [
    {
      id: 'see',
      code: 'return data.input',
      input: {
        event: '{{trigger.output.headers.x-github-event}}',
        method: '{{trigger.output.method}}',
        line: 'event {{ trigger.output.headers.x-github-event }} by {{trigger.output.method}}',
        body: '{{trigger.output.body}}',
      },
    },
  ]);
  const secret = 'a-github-webhook-secret-0123456789';
  const set = await rpc(base, 'SetWebhookAuthMethod', {
    workflowId: wf.id,
    authMethod: 'AUTH_METHOD_SIGNATURE',
    signaturePreset: 'SIGNATURE_PRESET_GITHUB',
    secret,
  });
  t.equal(set.status, 200, set.text);

  const run = async (body: string, contentType: string) => {
    const r = await hook(base, wf.id, {
      body,
      headers: {
        'content-type': contentType,
        'X-GitHub-Event': 'push',
        'X-GitHub-Delivery': 'd-1',
        authorization: 'Bearer nope',
        ...signedHeaders('GITHUB', secret, body),
      },
    });
    t.equal(r.status, 202, r.text);
    return waitForFinish(base, r.json.executionId);
  };

  const ex = await run('[{"email":"a@example.com","event":"open"},{"email":"b@example.com","event":"click"}]', 'application/json');
  t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED', JSON.stringify(ex));
  t.same(ex.nodes[0].output, {
    event: 'push',
    method: 'POST',
    line: 'event push by POST',
    body: [
      { email: 'a@example.com', event: 'open' },
      { email: 'b@example.com', event: 'click' },
    ],
  });
  t.same(ex.trigger.body, [
    { email: 'a@example.com', event: 'open' },
    { email: 'b@example.com', event: 'click' },
  ]);
  t.equal(ex.trigger.method, 'POST');
  t.equal(ex.trigger.headers['x-github-event'], 'push');
  t.equal(ex.trigger.headers['x-github-delivery'], 'd-1');
  t.notOk('authorization' in ex.trigger.headers, 'no credential in the record');
  t.notOk('x-hub-signature-256' in ex.trigger.headers, 'no signature in the record');
  t.notMatch(JSON.stringify(ex), secret, 'the signing secret is nowhere in the execution');

  const text = await run('plain text from a sender\nline 2', 'text/plain');
  t.equal(text.status, 'EXECUTION_STATUS_SUCCEEDED');
  t.equal(text.nodes[0].output.body, 'plain text from a sender\nline 2', 'a text body is a string');
  t.equal(text.trigger.body, 'plain text from a sender\nline 2');
});
