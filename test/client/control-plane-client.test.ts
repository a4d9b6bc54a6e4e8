/**
 * `createControlPlaneClient` (what `ldbox/client` exports) against a real gateway on a real nats-server:
 * with the admin token it creates a workflow, lists it and gets it back (Connect over HTTP/1.1, binary, as
 * the client sends it); with a wrong or missing token every call rejects with the documented
 * `ConnectError` `Unauthenticated` (the gateway's 401) and nothing is created.
 */
import t from 'tap';
import { AuthMethod } from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { Code, ConnectError, createControlPlaneClient } from '../../src/client/ldbox-client.js';
import { ADMIN_TOKEN, gatewayFixture } from '../gateway/harness.js';

const UNAUTHENTICATED = 'missing or wrong admin token: send Authorization: Bearer <LDBOX_ADMIN_TOKEN>';

/** The ConnectError a call rejects with; undefined when it resolved. */
async function refusal(p: Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await p;
  } catch (err) {
    return err instanceof ConnectError ? err : ConnectError.from(err);
  }
  return undefined;
}

const { base } = await gatewayFixture(t);

t.test('with the admin token: create, list and get a workflow', async (t) => {
  const plane = createControlPlaneClient({ baseUrl: base, token: ADMIN_TOKEN });
  const created = await plane.workflows.createWorkflow({
    name: 'from-the-client',
    workspace: 'client-ws',
    nodes: [{ id: 'greet', code: 'return { hello: data.input.name }', input: { name: '{{trigger.output.body.name}}' } }],
    webhook: { authMethod: AuthMethod.HEADER },
  });
  const wf = created.workflow!;
  t.match(wf.id, /\S/, 'the workflow has an id');
  t.equal(wf.name, 'from-the-client');
  t.equal(wf.workspace, 'client-ws');
  t.equal(wf.version, 1);
  t.equal(wf.webhook?.authMethod, AuthMethod.HEADER);
  t.match(wf.webhook?.secret, /\S{16,}/, 'the webhook secret is shown once, at create');
  t.match(wf.webhook?.url, new RegExp(`^${base}/api/hooks/workflows/${wf.id}$`), 'the webhook URL');

  const listed = await plane.workflows.listWorkflows({ workspace: 'client-ws' });
  t.same(
    listed.workflows.map((w) => [w.id, w.name]),
    [[wf.id, 'from-the-client']],
    'ListWorkflows of the workspace has it',
  );
  t.equal(listed.nextPageToken, '', 'on one page');
  t.equal(listed.workflows[0]!.webhook?.secret, '', 'without the secret');
  t.equal(listed.workflows[0]!.webhook?.hasSecret, true);

  const got = (await plane.workflows.getWorkflow({ id: wf.id })).workflow!;
  t.equal(got.id, wf.id);
  t.equal(got.name, 'from-the-client');
  t.same(
    got.nodes.map((n) => ({ id: n.id, code: n.code, input: n.input })),
    [{ id: 'greet', code: 'return { hello: data.input.name }', input: { name: '{{trigger.output.body.name}}' } }],
    'GetWorkflow returns the nodes as created (Struct input as plain JSON)',
  );
  t.equal(got.webhook?.secret, '', 'without the secret');

  const missing = await refusal(plane.workflows.getWorkflow({ id: `wf_${'0'.repeat(20)}` }));
  t.equal(missing?.code, Code.NotFound, 'an unknown id: NotFound');
});

t.test('a wrong or missing admin token: Unauthenticated, with the gateway message, and nothing created', async (t) => {
  for (const [label, token] of [
    ['a wrong token', `${ADMIN_TOKEN}-wrong`],
    ['no token', undefined],
  ] as const) {
    const plane = createControlPlaneClient({ baseUrl: base, ...(token === undefined ? {} : { token }) });
    const listErr = await refusal(plane.workflows.listWorkflows({}));
    t.equal(listErr?.code, Code.Unauthenticated, `${label}: ListWorkflows is Unauthenticated`);
    t.equal(listErr?.rawMessage, UNAUTHENTICATED, `${label}: with the gateway's message`);
    const createErr = await refusal(plane.workflows.createWorkflow({ name: 'nope', workspace: 'client-ws', nodes: [{ id: 'a', code: 'return 1' }] }));
    t.equal(createErr?.code, Code.Unauthenticated, `${label}: CreateWorkflow is Unauthenticated`);
    const spendErr = await refusal(plane.workspaces.getWorkspace({ name: 'client-ws' }));
    t.equal(spendErr?.code, Code.Unauthenticated, `${label}: so is the workspace service`);
  }
  const plane = createControlPlaneClient({ baseUrl: base, token: ADMIN_TOKEN });
  t.same(
    (await plane.workflows.listWorkflows({ workspace: 'client-ws' })).workflows.map((w) => w.name),
    ['from-the-client'],
    'the refused create made nothing',
  );
});
