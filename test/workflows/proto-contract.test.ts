/**
 * The names of proto/ldbox/workflows/v1/workflows.proto that docs/design.md makes contract ("Names that are
 * contract"): the RPCs of WorkflowService, the JSON field names of Workflow and Execution, and the enum
 * value names, as Connect JSON shows them.
 */
import { create, fromJson, type JsonObject, toJson } from '@bufbuild/protobuf';
import { timestampFromDate, ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { ErrorKind, LogLevel } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import {
  AuthMethod,
  AuthMethodSchema,
  CancelExecutionRequestSchema,
  ExecutionSchema,
  ExecutionStatus,
  ExecutionStatusSchema,
  ListExecutionsRequestSchema,
  NodeErrorKind,
  ReplayExecutionRequestSchema,
  ReplayExecutionsRequestSchema,
  ReplayExecutionsResponseSchema,
  UpdateWorkflowRequestSchema,
  SetWebhookAuthMethodRequestSchema,
  SignaturePresetSchema,
  WorkflowSchema,
  WorkflowService,
  WorkspaceService,
} from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';

t.test('WorkflowService has exactly the RPCs of docs/design.md', async (t) => {
  t.equal(WorkflowService.typeName, 'ldbox.workflows.v1.WorkflowService');
  t.same(
    WorkflowService.methods.map((m) => m.name),
    [
      'CreateWorkflow',
      'GetWorkflow',
      'ListWorkflows',
      'DeleteWorkflow',
      'SetWebhookAuthMethod',
      'RotateWebhookSecret',
      'GetExecution',
      'ListExecutions',
      'UpdateWorkflow',
      'ReplayExecution',
      'ReplayExecutions',
      'CancelExecution',
    ],
  );
  t.ok(
    WorkflowService.methods.every((m) => m.methodKind === 'unary'),
    'all unary',
  );
  t.equal(WorkspaceService.typeName, 'ldbox.workflows.v1.WorkspaceService');
  t.same(
    WorkspaceService.methods.map((m) => m.name),
    ['GetWorkspace', 'SetWorkspaceBudget'],
    'the budget lives in its own service',
  );
});

t.test('enum value names', async (t) => {
  t.same(
    AuthMethodSchema.values.map((v) => v.name),
    ['AUTH_METHOD_UNSPECIFIED', 'AUTH_METHOD_NONE', 'AUTH_METHOD_HEADER', 'AUTH_METHOD_QUERY_PARAMETER', 'AUTH_METHOD_SIGNATURE'],
  );
  t.same(
    SignaturePresetSchema.values.map((v) => v.name),
    [
      'SIGNATURE_PRESET_UNSPECIFIED',
      'SIGNATURE_PRESET_GITHUB',
      'SIGNATURE_PRESET_STRIPE',
      'SIGNATURE_PRESET_STANDARD_WEBHOOKS',
      'SIGNATURE_PRESET_SHOPIFY',
      'SIGNATURE_PRESET_SLACK',
    ],
  );
  t.same(
    ExecutionStatusSchema.values.map((v) => v.name),
    [
      'EXECUTION_STATUS_UNSPECIFIED',
      'EXECUTION_STATUS_QUEUED',
      'EXECUTION_STATUS_RUNNING',
      'EXECUTION_STATUS_SUCCEEDED',
      'EXECUTION_STATUS_FAILED',
      'EXECUTION_STATUS_CANCELLED',
    ],
  );
});

t.test('Workflow in JSON: id, name, workspace, nodes[], webhook{webhookId, url, authMethod, secret, warnings}', async (t) => {
  const w = create(WorkflowSchema, {
    id: 'wf_x',
    name: 'n',
    workspace: 'ws',
    nodes: [{ id: 'a', code: 'return 1', input: { x: '{{trigger.output.body.x}}' }, auth: { k: 'v' }, limits: { timeoutMs: 1000, memoryBytes: 8n << 20n } }],
    webhook: { webhookId: 'wh_x', url: 'http://h/api/hooks/workflows/wf_x', authMethod: AuthMethod.QUERY_PARAMETER, secret: 's', warnings: ['w'] },
    rateLimitPerSecond: 5,
    createdAt: timestampFromDate(new Date('2025-01-02T03:04:05Z')),
  });
  t.same(toJson(WorkflowSchema, w), {
    id: 'wf_x',
    name: 'n',
    workspace: 'ws',
    nodes: [{ id: 'a', code: 'return 1', input: { x: '{{trigger.output.body.x}}' }, auth: { k: 'v' }, limits: { timeoutMs: 1000, memoryBytes: '8388608' } }],
    webhook: { webhookId: 'wh_x', url: 'http://h/api/hooks/workflows/wf_x', authMethod: 'AUTH_METHOD_QUERY_PARAMETER', secret: 's', warnings: ['w'] },
    rateLimitPerSecond: 5,
    createdAt: '2025-01-02T03:04:05Z',
  });
});

t.test('Execution in JSON: id, workflowId, status, trigger{body, query}, nodes[{id, status, output, logs, error}], createdAt, finishedAt', async (t) => {
  const json: JsonObject = {
    id: 'ex_1',
    workflowId: 'wf_x',
    status: 'EXECUTION_STATUS_FAILED',
    trigger: { body: { a: { b: 1 } }, query: { p: 'v', r: ['1', '2'] } },
    nodes: [
      {
        id: 'a',
        status: 'EXECUTION_STATUS_SUCCEEDED',
        output: [1, 'two', null],
        logs: [{ level: 'LOG_LEVEL_INFO', message: 'hi' }],
        startedAt: '2025-01-02T03:04:05Z',
        finishedAt: '2025-01-02T03:04:06Z',
      },
      {
        id: 'b',
        status: 'EXECUTION_STATUS_FAILED',
        error: {
          kind: 'NODE_ERROR_KIND_CODE',
          message: 'TypeError: x is undefined',
          codeError: { kind: 'ERROR_KIND_THROWN', name: 'TypeError', message: 'x is undefined', stack: 'at user.js:1:1' },
        },
      },
    ],
    error: 'node "b" failed: TypeError: x is undefined',
    createdAt: '2025-01-02T03:04:04Z',
    startedAt: '2025-01-02T03:04:05Z',
    finishedAt: '2025-01-02T03:04:07Z',
    attempts: 1,
    costUnits: '2',
  };
  const e = fromJson(ExecutionSchema, json);
  t.equal(e.workflowId, 'wf_x');
  t.equal(e.status, ExecutionStatus.FAILED);
  t.equal(e.nodes[1]?.error?.kind, NodeErrorKind.CODE);
  t.equal(e.nodes[1]?.error?.codeError?.kind, ErrorKind.THROWN);
  t.equal(e.nodes[0]?.logs[0]?.level, LogLevel.INFO);
  t.same(toJson(ValueSchema, e.nodes[0]!.output!), [1, 'two', null], 'output is a google.protobuf.Value');
  t.same(toJson(ExecutionSchema, e), json, 'round trip with the same names');
});

t.test('workflows over time in JSON: version, workflowVersion, replayOf, the ListExecutions filters, count', async (t) => {
  const e = fromJson(ExecutionSchema, { id: 'ex_x', workflowVersion: 3, replayOf: 'ex_y', status: 'EXECUTION_STATUS_CANCELLED' });
  t.equal(e.workflowVersion, 3);
  t.equal(e.replayOf, 'ex_y');
  t.equal(e.status, ExecutionStatus.CANCELLED);
  t.equal(fromJson(WorkflowSchema, { version: 2 }).version, 2);
  const list = fromJson(ListExecutionsRequestSchema, {
    workflowId: 'wf_x',
    statuses: ['EXECUTION_STATUS_FAILED'],
    createdAfter: '2026-01-01T00:00:00Z',
    createdBefore: '2026-01-02T00:00:00Z',
  });
  t.same(list.statuses, [ExecutionStatus.FAILED]);
  t.equal(list.createdAfter?.seconds, 1767225600n);
  const replay = fromJson(ReplayExecutionsRequestSchema, { statuses: ['EXECUTION_STATUS_FAILED'], createdAfter: '2026-01-01T00:00:00Z' });
  t.same(replay.statuses, [ExecutionStatus.FAILED]);
  t.same(toJson(ReplayExecutionsResponseSchema, create(ReplayExecutionsResponseSchema, { count: 2 })), { count: 2 });
  t.equal(fromJson(UpdateWorkflowRequestSchema, { workflow: { id: 'wf_x', name: 'n' } }).workflow?.id, 'wf_x');
  t.equal(fromJson(ReplayExecutionRequestSchema, { id: 'ex_x' }).id, 'ex_x');
  t.equal(fromJson(CancelExecutionRequestSchema, { id: 'ex_x' }).id, 'ex_x');
});

t.test('signature settings and what a node sees, in JSON (issue 12 contract names)', async (t) => {
  const req = fromJson(SetWebhookAuthMethodRequestSchema, {
    workflowId: 'wf_x',
    authMethod: 'AUTH_METHOD_SIGNATURE',
    signaturePreset: 'SIGNATURE_PRESET_STRIPE',
    secret: 'whsec_abc',
    verifyToken: 'tok',
    deduplicateDeliveries: true,
  });
  t.equal(req.authMethod, AuthMethod.SIGNATURE);
  t.same(toJson(SetWebhookAuthMethodRequestSchema, req), {
    workflowId: 'wf_x',
    authMethod: 'AUTH_METHOD_SIGNATURE',
    signaturePreset: 'SIGNATURE_PRESET_STRIPE',
    secret: 'whsec_abc',
    verifyToken: 'tok',
    deduplicateDeliveries: true,
  });
  const w = fromJson(WorkflowSchema, { webhook: { authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB', hasVerifyToken: true } });
  t.same(toJson(WorkflowSchema, w), { webhook: { authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB', hasVerifyToken: true } });
  for (const body of [[{ a: 1 }, 2], 'plain text', { o: true }]) {
    const trigger = { body, query: {}, headers: { 'x-github-event': 'push' }, method: 'POST' };
    const e = fromJson(ExecutionSchema, { trigger });
    t.same(toJson(ExecutionSchema, e), { trigger }, `trigger.body ${JSON.stringify(body)}, headers and method`);
  }
});
