/**
 * The control plane over curl-style Connect JSON on the gateway's HTTP/1.1 port: the admin token
 * (401 without it), CreateWorkflow's one-time secret, errors as Connect codes, pagination, executions,
 * and the health, readiness and metrics endpoints.
 */
import t from 'tap';
import { waitFor } from '../nats/util.js';
import { ADMIN_TOKEN, createWorkflow, gatewayFixture, hook, rpc } from './harness.js';

t.test('control plane', async (t) => {
  const { base } = await gatewayFixture(t);

  await t.test('every call needs the admin token: 401 unauthenticated', async (t) => {
    const body = { name: 'x', workspace: 'ws', nodes: [{ id: 'a', code: 'return 1' }] };
    const expected = { code: 'unauthenticated', message: 'missing or wrong admin token: send Authorization: Bearer <LDBOX_ADMIN_TOKEN>' };
    for (const token of [null, 'wrong-token-wrong-token', `${ADMIN_TOKEN}x`, '']) {
      const r = await rpc(base, 'CreateWorkflow', body, { token });
      t.equal(r.status, 401, `token ${JSON.stringify(token)}`);
      t.same(r.json, expected);
    }
    const ws = await rpc(base, 'GetWorkspace', { name: 'ws' }, { token: null, service: 'ldbox.workflows.v1.WorkspaceService' });
    t.equal(ws.status, 401);
    const list = await rpc(base, 'ListWorkflows', {}, { token: null });
    t.equal(list.status, 401);
  });

  await t.test('CreateWorkflow shows the secret once; GetWorkflow never', async (t) => {
    const r = await rpc(base, 'CreateWorkflow', {
      name: '  orders  ',
      workspace: 'shop',
      nodes: [{ id: 'send', code: 'return 1', input: { to: '{{trigger.output.body.email}}' }, auth: { api_key: 'k-123' }, limits: { timeoutMs: 1000 } }],
      webhook: { authMethod: 'AUTH_METHOD_HEADER' },
      rateLimitPerSecond: 7,
    });
    t.equal(r.status, 200);
    const wf = r.json.workflow;
    t.match(wf.id, /^wf_[0-9a-z]{20}$/);
    t.equal(wf.name, 'orders');
    t.same(wf.nodes, [
      { id: 'send', code: 'return 1', input: { to: '{{trigger.output.body.email}}' }, auth: { api_key: '[REDACTED]' }, limits: { timeoutMs: 1000 } },
    ]);
    t.equal(wf.rateLimitPerSecond, 7);
    t.equal(wf.webhook.url, `${base}/api/hooks/workflows/${wf.id}`);
    t.match(wf.webhook.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    const get = await rpc(base, 'GetWorkflow', { id: wf.id });
    t.equal(get.status, 200);
    const { secret: _s, ...webhookWithoutSecret } = wf.webhook;
    t.same(get.json.workflow, { ...wf, webhook: webhookWithoutSecret });
    t.notMatch(get.text, wf.webhook.secret);
  });

  await t.test('errors: INVALID_ARGUMENT 400, NOT_FOUND 404, naming the field', async (t) => {
    const bad = await rpc(base, 'CreateWorkflow', { name: 'x', workspace: 'ws', nodes: [{ id: 'a', code: '' }] });
    t.equal(bad.status, 400);
    t.same(bad.json, { code: 'invalid_argument', message: 'nodes[0].code is empty: send a JavaScript body that ends with `return`' });
    const tpl = await rpc(base, 'CreateWorkflow', { name: 'x', workspace: 'ws', nodes: [{ id: 'a', code: 'return 1', input: { v: '{{nodes.b.output}}' } }] });
    t.equal(tpl.status, 400);
    t.match(tpl.json.message, /^nodes\[0\]\.input\.v: /);
    const badId = await rpc(base, 'GetWorkflow', { id: 'nope' });
    t.equal(badId.status, 400);
    t.same(badId.json, { code: 'invalid_argument', message: 'id "nope" is not a workflow id (wf_ and 20 characters of 0-9 a-z)' });
    const missing = 'wf_' + '1'.repeat(20);
    const nf = await rpc(base, 'GetWorkflow', { id: missing });
    t.equal(nf.status, 404);
    t.same(nf.json, { code: 'not_found', message: `workflow ${missing} not found` });
    t.equal((await rpc(base, 'DeleteWorkflow', { id: missing })).status, 404);
    t.equal((await rpc(base, 'SetWebhookAuthMethod', { workflowId: missing, authMethod: 'AUTH_METHOD_NONE' })).status, 404);
    t.equal((await rpc(base, 'RotateWebhookSecret', { workflowId: missing })).status, 404);
    const token = await rpc(base, 'ListWorkflows', { pageToken: 'garbage' });
    t.equal(token.status, 400);
    t.same(token.json, { code: 'invalid_argument', message: 'pageToken is not a token from a previous ListWorkflows call' });
  });

  await t.test('ListWorkflows pages in id order and filters by workspace', async (t) => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createWorkflow(base, { workspace: 'paged', authMethod: 'AUTH_METHOD_NONE' })).id);
    ids.sort();
    const seen: string[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const r = await rpc(base, 'ListWorkflows', { workspace: 'paged', pageSize: 2, pageToken });
      t.equal(r.status, 200);
      const page: any[] = r.json.workflows ?? [];
      t.ok(page.length <= 2);
      t.ok(page.every((w) => w.workspace === 'paged' && w.webhook.secret === undefined));
      seen.push(...page.map((w) => w.id));
      pageToken = r.json.nextPageToken ?? '';
      pages++;
    } while (pageToken !== '' && pages < 10);
    t.same(seen, ids);
    t.equal(pages, 3);
  });

  await t.test('executions: queued record at accept time, newest first, paged', async (t) => {
    const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await hook(base, wf.id, { body: { i }, query: `p=${i}&p=x` })).json.executionId);
    let got: any;
    await waitFor(async () => (got = await rpc(base, 'GetExecution', { id: ids[2] })).status === 200, 3000, 'queued record');
    t.same(got.json.execution, {
      id: ids[2],
      workflowId: wf.id,
      status: 'EXECUTION_STATUS_QUEUED',
      trigger: { body: { i: 2 }, query: { p: ['2', 'x'] }, headers: got.json.execution.trigger.headers, method: 'POST' },
      createdAt: got.json.execution.createdAt,
    });
    t.equal(got.json.execution.trigger.headers['content-type'], 'application/json', 'the queued record shows the headers');
    await waitFor(async () => ((await rpc(base, 'ListExecutions', { workflowId: wf.id })).json.executions ?? []).length === 3, 3000, 'all three listed');
    const p1 = await rpc(base, 'ListExecutions', { workflowId: wf.id, pageSize: 2 });
    t.same(
      p1.json.executions.map((e: any) => e.id),
      [ids[2], ids[1]],
      'newest first',
    );
    const p2 = await rpc(base, 'ListExecutions', { workflowId: wf.id, pageSize: 2, pageToken: p1.json.nextPageToken });
    t.same(
      p2.json.executions.map((e: any) => e.id),
      [ids[0]],
    );
    t.equal(p2.json.nextPageToken, undefined, 'last page');
    const nf = await rpc(base, 'GetExecution', { id: 'ex_' + '0'.repeat(26) });
    t.equal(nf.status, 404);
  });

  await t.test('workspaces: unknown reads as no cap; budget set and read', async (t) => {
    const svc = { service: 'ldbox.workflows.v1.WorkspaceService' };
    const fresh = await rpc(base, 'GetWorkspace', { name: 'new-ws' }, svc);
    t.equal(fresh.status, 200);
    t.match(fresh.json.workspace, { name: 'new-ws', periodStart: /^\d{4}-\d{2}-01T00:00:00Z$/ });
    t.equal(fresh.json.workspace.monthlyBudgetUnits, undefined, '0 = no cap');
    const set = await rpc(base, 'SetWorkspaceBudget', { name: 'new-ws', monthlyBudgetUnits: '500' }, svc);
    t.equal(set.json.workspace.monthlyBudgetUnits, '500');
    t.equal((await rpc(base, 'GetWorkspace', { name: 'new-ws' }, svc)).json.workspace.monthlyBudgetUnits, '500');
    const bad = await rpc(base, 'GetWorkspace', { name: '-bad' }, svc);
    t.equal(bad.status, 400);
    t.same(bad.json, {
      code: 'invalid_argument',
      message:
        'name must be tokens of A-Z a-z 0-9 _ - separated by single dots, starting with a letter or digit (no whitespace, * or >, no leading, trailing or double dot), got "-bad"',
    });
  });

  await t.test('healthz, readyz, metrics', async (t) => {
    const h = await fetch(`${base}/healthz`);
    t.equal(h.status, 200);
    t.same(await h.json(), { status: 'ok' });
    const r = await fetch(`${base}/readyz`);
    t.equal(r.status, 200);
    t.same(await r.json(), { status: 'ready', nats: 'connected', streamReady: true, workflowsLoaded: true, workspacesLoaded: true });
    const m = await fetch(`${base}/metrics`);
    t.equal(m.status, 200);
    const text = await m.text();
    t.match(text, /ldbox_gateway_requests_total\{route="webhook",status="202"\} \d+/);
    t.match(text, /ldbox_gateway_requests_total\{route="control_plane",status="401"\} \d+/);
    t.match(text, /ldbox_gateway_enqueue_seconds_count\{outcome="ok"\} \d+/);
    t.match(text, /ldbox_gateway_nats_connected 1/);
  });
});
