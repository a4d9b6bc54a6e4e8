/**
 * Names that become NATS KV keys or subject tokens are refused over real HTTP with 400 naming the field:
 * workspace names (CreateWorkflow, ListWorkflows, GetWorkspace, SetWorkspaceBudget) and node ids. Valid
 * names still work end to end (a budget set and read back under a dotted name).
 */
import t from 'tap';
import { gatewayFixture, rpc } from './harness.js';

const WORKSPACES = { service: 'ldbox.workflows.v1.WorkspaceService' };
const FORMAT = (field: string, bad: string) =>
  `${field} must be tokens of A-Z a-z 0-9 _ - separated by single dots, starting with a letter or digit (no whitespace, * or >, no leading, trailing or double dot), got ${JSON.stringify(bad)}`;
const BAD: [string, (field: string) => string][] = [
  ['a.', (f) => FORMAT(f, 'a.')],
  ['.a', (f) => FORMAT(f, '.a')],
  ['a..b', (f) => FORMAT(f, 'a..b')],
  ['a*', (f) => FORMAT(f, 'a*')],
  ['a>', (f) => FORMAT(f, 'a>')],
  ['a.>', (f) => FORMAT(f, 'a.>')],
  ['a b', (f) => FORMAT(f, 'a b')],
  ['a\tb', (f) => FORMAT(f, 'a\tb')],
  ['x'.repeat(65), (f) => `${f} must be at most 64 characters, got 65`],
];

t.test('names over the control plane', async (t) => {
  const { base } = await gatewayFixture(t);
  const workflow = (workspace: string, nodeId = 'a') => ({ name: 'n', workspace, nodes: [{ id: nodeId, code: 'return 1' }] });

  await t.test('bad workspace names: 400 naming the field, for every call that takes one', async (t) => {
    for (const [bad, message] of BAD) {
      const what = JSON.stringify(bad);
      const create = await rpc(base, 'CreateWorkflow', workflow(bad));
      t.equal(create.status, 400, `CreateWorkflow ${what}`);
      t.same(create.json, { code: 'invalid_argument', message: message('workspace') }, `CreateWorkflow ${what}`);
      const list = await rpc(base, 'ListWorkflows', { workspace: bad });
      t.equal(list.status, 400, `ListWorkflows ${what}`);
      t.same(list.json, { code: 'invalid_argument', message: message('workspace') }, `ListWorkflows ${what}`);
      const get = await rpc(base, 'GetWorkspace', { name: bad }, WORKSPACES);
      t.equal(get.status, 400, `GetWorkspace ${what}`);
      t.same(get.json, { code: 'invalid_argument', message: message('name') }, `GetWorkspace ${what}`);
      const set = await rpc(base, 'SetWorkspaceBudget', { name: bad, monthlyBudgetUnits: '5' }, WORKSPACES);
      t.equal(set.status, 400, `SetWorkspaceBudget ${what}`);
      t.same(set.json, { code: 'invalid_argument', message: message('name') }, `SetWorkspaceBudget ${what}`);
    }
  });

  await t.test('empty: required where a name is required', async (t) => {
    const create = await rpc(base, 'CreateWorkflow', workflow(''));
    t.equal(create.status, 400);
    t.same(create.json, { code: 'invalid_argument', message: 'workspace is required' });
    const get = await rpc(base, 'GetWorkspace', { name: '' }, WORKSPACES);
    t.equal(get.status, 400);
    t.same(get.json, { code: 'invalid_argument', message: 'name is required' });
    const list = await rpc(base, 'ListWorkflows', { workspace: '' });
    t.equal(list.status, 200, 'ListWorkflows without a workspace lists all');
  });

  await t.test('bad node ids: 400 naming the node', async (t) => {
    for (const bad of ['a.b', 'a*', 'a>', 'a b', '', 'x'.repeat(65)]) {
      const r = await rpc(base, 'CreateWorkflow', workflow('ws', bad));
      t.equal(r.status, 400, JSON.stringify(bad));
      t.same(
        r.json,
        {
          code: 'invalid_argument',
          message:
            bad === ''
              ? 'nodes[0].id is required'
              : `nodes[0].id must be 1 to 64 characters of A-Z a-z 0-9 _ -, starting with a letter or _, got ${JSON.stringify(bad)}`,
        },
        JSON.stringify(bad),
      );
    }
  });

  await t.test('valid names still work, dotted ones included', async (t) => {
    for (const good of ['team-1', 'a.b', 'Acme_Corp.prod-2', 'x'.repeat(64)]) {
      const create = await rpc(base, 'CreateWorkflow', workflow(good, 'step_1'));
      t.equal(create.status, 200, `CreateWorkflow ${good}: ${create.text}`);
      t.equal(create.json.workflow.workspace, good);
      const list = await rpc(base, 'ListWorkflows', { workspace: good });
      t.equal(list.status, 200);
      t.same(
        list.json.workflows.map((w: { id: string }) => w.id),
        [create.json.workflow.id],
        `ListWorkflows ${good}`,
      );
      const set = await rpc(base, 'SetWorkspaceBudget', { name: good, monthlyBudgetUnits: '7' }, WORKSPACES);
      t.equal(set.status, 200, `SetWorkspaceBudget ${good}: ${set.text}`);
      const get = await rpc(base, 'GetWorkspace', { name: good }, WORKSPACES);
      t.equal(get.status, 200);
      t.equal(get.json.workspace.name, good);
      t.equal(get.json.workspace.monthlyBudgetUnits, '7', `the budget of ${good} reads back`);
    }
  });
});
