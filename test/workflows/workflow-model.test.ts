/**
 * The workflow model (src/workflows/workflow-model.ts): every CreateWorkflow check with its exact
 * message and field, the record a draft becomes, the webhook URL, and the record's proto form (no hash,
 * secret only when just generated, auth values redacted).
 */
import { create, fromJson, type JsonObject, toJson } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { AuthMethod, type CreateWorkflowRequest, CreateWorkflowRequestSchema, WorkflowSchema } from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { isWorkflowValidationError, type WorkflowValidationError } from '../../src/workflows/validation-error.js';
import { hashWebhookSecret, rotateWebhookSecret } from '../../src/workflows/webhook-secret.js';
import {
  authMethodFromProto,
  authMethodToProto,
  checkExecutionId,
  checkWorkflowId,
  checkWorkspaceName,
  createWorkflowRecord,
  DEFAULT_WORKFLOW_LIMITS,
  EXECUTION_PAGE_SIZE,
  gracePeriodFromProto,
  resolvePageSize,
  toProtoWebhook,
  toProtoWorkflow,
  validateCreateWorkflow,
  WORKFLOW_PAGE_SIZE,
  type WorkflowDraft,
  type WorkflowRecord,
  webhookUrl,
} from '../../src/workflows/workflow-model.js';
import { normalizeBaseUrl } from '../../src/workflows/base-url.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];
type RequestJson = Record<string, unknown>;

const MiB = 1024 * 1024;
const NOW = new Date('2025-03-01T12:00:00.000Z');
const BASE = 'https://hooks.example.com';

/** A valid request in Connect JSON, as curl would send it. */
function requestJson(): RequestJson {
  return {
    name: 'Order sync',
    workspace: 'acme',
    nodes: [
      {
        id: 'fetch',
        code: 'return { n: data.input.count };',
        input: { count: '{{trigger.output.body.count}}', who: 'Hi {{trigger.output.query.user}}' },
        auth: { api_key: 'k-123', nested: { token: 't', port: 443 } },
        limits: { timeoutMs: 5000, memoryBytes: '16777216' },
      },
      { id: 'send', code: 'return data.input;', input: { n: '{{nodes.fetch.output.n}}' } },
    ],
    webhook: { authMethod: 'AUTH_METHOD_HEADER' },
    rateLimitPerSecond: 10,
  };
}

function request(json: RequestJson = requestJson()): CreateWorkflowRequest {
  return fromJson(CreateWorkflowRequestSchema, json as never);
}

/** `requestJson()` changed by `edit`. */
function edited(edit: (r: RequestJson & { nodes: RequestJson[] }) => void): CreateWorkflowRequest {
  const json = requestJson() as RequestJson & { nodes: RequestJson[] };
  edit(json);
  return request(json);
}

function refusal(t: Test, req: CreateWorkflowRequest, limits = DEFAULT_WORKFLOW_LIMITS): WorkflowValidationError | undefined {
  try {
    validateCreateWorkflow(req, limits);
  } catch (err) {
    if (isWorkflowValidationError(err)) return err;
    throw err;
  }
  t.fail('not refused');
  return undefined;
}

function refused(t: Test, req: CreateWorkflowRequest, field: string, message: string, limits = DEFAULT_WORKFLOW_LIMITS): void {
  const err = refusal(t, req, limits);
  t.equal(err?.message, message, message);
  t.equal(err?.field, field, `field ${field}`);
  t.equal(err?.code, 'INVALID_ARGUMENT');
}

t.test('a valid request becomes a draft', async (t) => {
  const draft = validateCreateWorkflow(request());
  t.same(draft, {
    name: 'Order sync',
    workspace: 'acme',
    nodes: [
      {
        id: 'fetch',
        code: 'return { n: data.input.count };',
        input: { count: '{{trigger.output.body.count}}', who: 'Hi {{trigger.output.query.user}}' },
        auth: { api_key: 'k-123', nested: { token: 't', port: 443 } },
        limits: { timeoutMs: 5000, memoryBytes: 16 * MiB },
      },
      { id: 'send', code: 'return data.input;', input: { n: '{{nodes.fetch.output.n}}' }, auth: {}, limits: { timeoutMs: 0, memoryBytes: 0 } },
    ],
    authMethod: 'header',
    rateLimitPerSecond: 10,
  } satisfies WorkflowDraft);
  const minimal = validateCreateWorkflow(request({ name: ' x ', workspace: 'w', nodes: [{ id: 'a', code: 'return 1' }] }));
  t.equal(minimal.name, 'x', 'name trimmed');
  t.equal(minimal.authMethod, 'legacy', 'no webhook: legacy');
  t.equal(minimal.rateLimitPerSecond, 0, 'rate: the default');
  t.same(minimal.nodes[0]?.input, {}, 'input {}');
});

t.test('name', async (t) => {
  refused(
    t,
    edited((r) => delete r['name']),
    'name',
    'name is required',
  );
  refused(
    t,
    edited((r) => (r['name'] = '   ')),
    'name',
    'name is required',
  );
  refused(
    t,
    edited((r) => (r['name'] = 'x'.repeat(201))),
    'name',
    'name must be at most 200 characters, got 201',
  );
  t.equal(validateCreateWorkflow(edited((r) => (r['name'] = '😀'.repeat(200)))).name.length, 400, '200 characters outside the BMP are fine');
  refused(
    t,
    edited((r) => (r['name'] = 'a\nb')),
    'name',
    'name must not contain control characters',
  );
  refused(
    t,
    edited((r) => (r['name'] = 'a\u0000b')),
    'name',
    'name must not contain control characters',
  );
  refused(
    t,
    edited((r) => (r['name'] = 'a\u2028b')),
    'name',
    'name must not contain control characters',
  );
});

t.test('workspace', async (t) => {
  const format = (bad: string) =>
    `workspace must be tokens of A-Z a-z 0-9 _ - separated by single dots, starting with a letter or digit (no whitespace, * or >, no leading, trailing or double dot), got ${JSON.stringify(bad)}`;
  refused(
    t,
    edited((r) => delete r['workspace']),
    'workspace',
    'workspace is required',
  );
  for (const bad of ['-acme', '.x', 'a.', 'a..b', 'a*', 'a>', 'a.*', 'a b', 'a\tb', 'a/b', 'ünï']) {
    refused(
      t,
      edited((r) => (r['workspace'] = bad)),
      'workspace',
      format(bad),
    );
  }
  refused(
    t,
    edited((r) => (r['workspace'] = 'x'.repeat(65))),
    'workspace',
    'workspace must be at most 64 characters, got 65',
  );
  for (const good of ['a', 'Acme_Corp-2.prod', 'a.b.c', 'team-1', 'a.-b', 'x'.repeat(64), '0'])
    t.equal(validateCreateWorkflow(edited((r) => (r['workspace'] = good))).workspace, good);
  t.throws(() => checkWorkspaceName('a b', 'name'), { message: format('a b').replace(/^workspace/, 'name') });
});

t.test('nodes: count and ids', async (t) => {
  refused(
    t,
    edited((r) => (r.nodes = [])),
    'nodes',
    'nodes must hold at least one node',
  );
  refused(
    t,
    edited((r) => (r.nodes = Array.from({ length: 51 }, (_, i) => ({ id: `n${i}`, code: 'return 1' })))),
    'nodes',
    'nodes holds 51 nodes, over the limit of 50',
  );
  t.equal(validateCreateWorkflow(edited((r) => (r.nodes = Array.from({ length: 50 }, (_, i) => ({ id: `n${i}`, code: 'return 1' }))))).nodes.length, 50);
  refused(
    t,
    edited((r) => (r.nodes[1]!['id'] = '')),
    'nodes[1].id',
    'nodes[1].id is required',
  );
  for (const bad of ['1st', 'a.b', 'a b', '-a', 'x'.repeat(65), 'é']) {
    refused(
      t,
      edited((r) => (r.nodes[1]!['id'] = bad)),
      'nodes[1].id',
      `nodes[1].id must be 1 to 64 characters of A-Z a-z 0-9 _ -, starting with a letter or _, got ${JSON.stringify(bad)}`,
    );
  }
  for (const reserved of ['__proto__', 'constructor', 'prototype']) {
    refused(
      t,
      edited((r) => (r.nodes[0]!['id'] = reserved)),
      'nodes[0].id',
      `nodes[0].id ${JSON.stringify(reserved)} is reserved`,
    );
  }
  refused(
    t,
    edited((r) => (r.nodes[1]!['id'] = 'fetch')),
    'nodes[1].id',
    'nodes[1].id "fetch" is already the id of nodes[0]',
  );
  t.equal(validateCreateWorkflow(edited((r) => (r.nodes[1]!['id'] = '_a-B_9'))).nodes[1]?.id, '_a-B_9');
});

t.test('nodes: code', async (t) => {
  refused(
    t,
    edited((r) => (r.nodes[0]!['code'] = '')),
    'nodes[0].code',
    'nodes[0].code is empty: send a JavaScript body that ends with `return`',
  );
  refused(
    t,
    edited((r) => (r.nodes[0]!['code'] = ' \n\t')),
    'nodes[0].code',
    'nodes[0].code is empty: send a JavaScript body that ends with `return`',
  );
  const limits = { ...DEFAULT_WORKFLOW_LIMITS, maxCodeBytes: 10 };
  const twoNodes = (code: string): CreateWorkflowRequest =>
    request({
      name: 'x',
      workspace: 'w',
      nodes: [
        { id: 'a', code: 'return 1;' },
        { id: 'b', code },
      ],
    });
  refused(t, twoNodes('return "é";'), 'nodes[1].code', 'nodes[1].code is 12 bytes, over the limit of 10 bytes', limits);
  t.equal(validateCreateWorkflow(twoNodes('return 12;'), limits).nodes[1]?.code, 'return 12;', 'exactly 10 bytes');
});

t.test('nodes: limits', async (t) => {
  refused(
    t,
    edited((r) => (r.nodes[0]!['limits'] = { timeoutMs: 120_001 })),
    'nodes[0].limits.timeoutMs',
    'nodes[0].limits.timeoutMs must be at most 120000, got 120001',
  );
  t.equal(validateCreateWorkflow(edited((r) => (r.nodes[0]!['limits'] = { timeoutMs: 120_000 }))).nodes[0]?.limits.timeoutMs, 120_000);
  refused(
    t,
    edited((r) => (r.nodes[0]!['limits'] = { memoryBytes: String(512 * MiB + 1) })),
    'nodes[0].limits.memoryBytes',
    `nodes[0].limits.memoryBytes must be at most ${512 * MiB}, got ${512 * MiB + 1}`,
  );
  refused(
    t,
    edited((r) => (r.nodes[0]!['limits'] = { memoryBytes: '1024' })),
    'nodes[0].limits.memoryBytes',
    `nodes[0].limits.memoryBytes must be 0 (the default) or at least ${4 * MiB}, got 1024`,
  );
  refused(
    t,
    edited((r) => (r.nodes[0]!['limits'] = { memoryBytes: '18446744073709551615' })),
    'nodes[0].limits.memoryBytes',
    `nodes[0].limits.memoryBytes must be at most ${512 * MiB}, got 18446744073709551615`,
  );
  t.same(validateCreateWorkflow(edited((r) => (r.nodes[0]!['limits'] = { memoryBytes: String(4 * MiB) }))).nodes[0]?.limits, {
    timeoutMs: 0,
    memoryBytes: 4 * MiB,
  });
  const custom = { ...DEFAULT_WORKFLOW_LIMITS, maxTimeoutMs: 1000 };
  refused(
    t,
    edited((r) => (r.nodes[0]!['limits'] = { timeoutMs: 1001 })),
    'nodes[0].limits.timeoutMs',
    'nodes[0].limits.timeoutMs must be at most 1000, got 1001',
    custom,
  );
});

t.test('nodes: input and auth size and shape', async (t) => {
  const small = { ...DEFAULT_WORKFLOW_LIMITS, maxInputBytes: 100 };
  const sized = (input: JsonObject, auth: JsonObject): CreateWorkflowRequest =>
    request({
      name: 'x',
      workspace: 'w',
      nodes: [
        { id: 'a', code: 'return 1' },
        { id: 'b', code: 'return 1', input, auth },
      ],
    });
  // {"input":{"v":"<n x>"},"auth":{}} is 28 + n bytes.
  t.equal(Buffer.byteLength(JSON.stringify({ input: { v: 'x'.repeat(72) }, auth: {} })), 100);
  t.doesNotThrow(() => validateCreateWorkflow(sized({ v: 'x'.repeat(72) }, {}), small), 'exactly the limit');
  refused(t, sized({ v: 'x'.repeat(73) }, {}), 'nodes[1].input', 'nodes[1].input and nodes[1].auth are 101 bytes of JSON, over the limit of 100 bytes', small);
  refused(t, sized({}, { v: 'é'.repeat(37) }), 'nodes[1].input', 'nodes[1].input and nodes[1].auth are 102 bytes of JSON, over the limit of 100 bytes', small);
  const nest = (levels: number): JsonObject => {
    let v: JsonObject = { leaf: 1 };
    for (let i = 1; i < levels; i++) v = { d: v };
    return v;
  };
  t.doesNotThrow(() => validateCreateWorkflow(sized(nest(32), {})), '32 levels of objects are fine');
  refused(t, sized(nest(33), {}), 'nodes[1].input', `nodes[1].input${'.d'.repeat(32)} is nested deeper than 32 levels`);
  refused(t, sized({}, { a: [[[{}]]] }), 'nodes[1].auth', 'nodes[1].auth.a[0][0] is nested deeper than 3 levels', {
    ...DEFAULT_WORKFLOW_LIMITS,
    maxInputDepth: 3,
  });
  t.doesNotThrow(() => validateCreateWorkflow(sized({}, { a: [[1]] }), { ...DEFAULT_WORKFLOW_LIMITS, maxInputDepth: 3 }), '3 levels');
  const req = request();
  req.nodes[0]!.input = { n: Number.NaN };
  refused(t, req, 'nodes[0].input', 'nodes[0].input.n is NaN, not a JSON number');
});

t.test('nodes: templates are checked, naming the node and the field', async (t) => {
  refused(
    t,
    edited((r) => (r.nodes[0]!['input'] = { a: { b: ['ok', '{{trigger.output.body.x'] } })),
    'nodes[0].input.a.b[1]',
    'nodes[0].input.a.b[1]: {{trigger.output.body.x: unclosed template: "}}" is missing (node "fetch", line 1, column 1 of the value)',
  );
  refused(
    t,
    edited((r) => (r.nodes[0]!['input'] = { to: '{{secrets.key}}' })),
    'nodes[0].input.to',
    'nodes[0].input.to: {{secrets.key}}: unknown root "secrets": a template starts with trigger.output or nodes.<node id>.output (node "fetch", line 1, column 1 of the value)',
  );
  refused(
    t,
    edited((r) => (r.nodes[0]!['input'] = { me: '{{nodes.fetch.output}}' })),
    'nodes[0].input.me',
    'nodes[0].input.me: {{nodes.fetch.output}}: node "fetch" does not run before this node (node "fetch", line 1, column 1 of the value)',
  );
  refused(
    t,
    edited((r) => (r.nodes[0]!['input'] = { later: 'x\n  y {{nodes.send.output.n}}' })),
    'nodes[0].input.later',
    'nodes[0].input.later: {{nodes.send.output.n}}: node "send" does not run before this node (node "fetch", line 2, column 5 of the value)',
  );
  refused(
    t,
    edited((r) => (r.nodes[1]!['input'] = { ghost: '{{nodes.ghost.output}}' })),
    'nodes[1].input.ghost',
    'nodes[1].input.ghost: {{nodes.ghost.output}}: node "ghost" does not run before this node (node "send", line 1, column 1 of the value)',
  );
  const err = refusal(
    t,
    edited((r) => (r.nodes[0]!['input'] = { x: '{{}}' })),
  );
  t.equal((err?.cause as { code?: string } | undefined)?.code, 'TEMPLATE_SYNTAX', 'the TemplateError is the cause');
  t.doesNotThrow(() => validateCreateWorkflow(edited((r) => (r.nodes[0]!['auth'] = { key: '{{not a template' }))), 'auth is never a template');
  t.doesNotThrow(() => validateCreateWorkflow(edited((r) => (r.nodes[0]!['input'] = { x: '\\{{literal' }))), 'escaped braces are fine');
});

t.test('webhook auth method and rate limit', async (t) => {
  const cases: [string | undefined, string][] = [
    [undefined, 'legacy'],
    ['AUTH_METHOD_UNSPECIFIED', 'legacy'],
    ['AUTH_METHOD_NONE', 'none'],
    ['AUTH_METHOD_HEADER', 'header'],
    ['AUTH_METHOD_QUERY_PARAMETER', 'query'],
  ];
  for (const [method, want] of cases) {
    t.equal(validateCreateWorkflow(edited((r) => (r['webhook'] = method === undefined ? {} : { authMethod: method }))).authMethod, want, String(method));
  }
  const req = request();
  req.webhook!.authMethod = 9 as AuthMethod;
  refused(t, req, 'webhook.authMethod', 'webhook.authMethod 9 is not a known AuthMethod');
  t.equal(
    validateCreateWorkflow(edited((r) => (r['webhook'] = { authMethod: 'AUTH_METHOD_NONE', url: 'ignored', secret: 'ignored', webhookId: 'ignored' })))
      .authMethod,
    'none',
    'output-only webhook fields are ignored',
  );
  refused(
    t,
    edited((r) => (r['rateLimitPerSecond'] = 100_001)),
    'rateLimitPerSecond',
    'rateLimitPerSecond must be at most 100000, got 100001',
  );
  t.equal(validateCreateWorkflow(edited((r) => (r['rateLimitPerSecond'] = 100_000))).rateLimitPerSecond, 100_000);
});

t.test('checks run in field order: the first problem is reported', async (t) => {
  refused(t, request({ name: '', workspace: '', nodes: [] }), 'name', 'name is required');
  refused(t, request({ name: 'x', workspace: '', nodes: [] }), 'workspace', 'workspace is required');
  refused(
    t,
    request({ name: 'x', workspace: 'w', nodes: [{ id: 'a', code: '' }, { id: '' }] }),
    'nodes[0].code',
    'nodes[0].code is empty: send a JavaScript body that ends with `return`',
  );
});

t.test('ids of requests', async (t) => {
  t.doesNotThrow(() => checkWorkflowId('wf_0123456789abcdefghjk'));
  t.throws(() => checkWorkflowId(''), { message: 'id is required', field: 'id' });
  t.throws(() => checkWorkflowId('wf_123', 'workflowId'), {
    message: 'workflowId "wf_123" is not a workflow id (wf_ and 20 characters of 0-9 a-z)',
    field: 'workflowId',
  });
  t.throws(() => checkExecutionId('ex_1'), { message: 'id "ex_1" is not an execution id (ex_ and 26 characters of 0-9 a-z)' });
  t.doesNotThrow(() => checkExecutionId(`ex_${'0'.repeat(26)}`));
});

t.test('auth method mapping', async (t) => {
  for (const m of ['legacy', 'none', 'header', 'query'] as const) t.equal(authMethodFromProto(authMethodToProto(m)), m, m);
  t.equal(authMethodToProto('legacy'), AuthMethod.UNSPECIFIED);
  t.equal(authMethodToProto('query'), AuthMethod.QUERY_PARAMETER);
  t.throws(() => authMethodFromProto(-1 as AuthMethod), { message: 'authMethod -1 is not a known AuthMethod' });
});

t.test('webhook URL and base URL', async (t) => {
  t.equal(webhookUrl('https://h.example.com', 'wf_x'), 'https://h.example.com/api/hooks/workflows/wf_x');
  t.equal(webhookUrl('https://h.example.com/', 'wf_x'), 'https://h.example.com/api/hooks/workflows/wf_x');
  t.equal(webhookUrl('https://h.example.com/ldbox//', 'wf_x'), 'https://h.example.com/ldbox/api/hooks/workflows/wf_x');
  t.equal(normalizeBaseUrl('http://127.0.0.1:8080'), 'http://127.0.0.1:8080');
  t.equal(normalizeBaseUrl('https://Example.COM/prefix/'), 'https://example.com/prefix');
  t.throws(() => normalizeBaseUrl('example.com'), { message: 'LDBOX_BASE_URL must be an absolute http or https URL, got "example.com"' });
  for (const bad of ['ftp://x', 'https://u:p@x', 'https://x/?q=1', 'https://x/#f']) {
    t.throws(() => normalizeBaseUrl(bad), {
      message: `LDBOX_BASE_URL must be an http or https URL without credentials, query or fragment, got ${JSON.stringify(bad)}`,
    });
  }
});

/** A record from the standard request with a counter-based random source. */
function newRecord(json: RequestJson = requestJson()): { record: WorkflowRecord; secret: string | undefined } {
  let n = 0;
  return createWorkflowRecord(validateCreateWorkflow(request(json)), { now: NOW, random: (size) => Buffer.alloc(size, ++n) });
}

t.test('a draft becomes a record: ids, time, hashed secret', async (t) => {
  const { record, secret } = newRecord();
  t.equal(record.id, 'wf_22222222222222222222', 'first random draw: the secret; then the workflow id');
  t.equal(record.webhook.webhookId, 'wh_33333333333333333333');
  t.equal(secret, `whsec_${Buffer.alloc(32, 1).toString('base64url')}`);
  t.same(record.webhook.auth, { method: 'header', secretHash: hashWebhookSecret(secret!), previousSecretHash: null, previousSecretExpiresAt: null });
  t.equal(record.createdAt, '2025-03-01T12:00:00.000Z');
  t.equal(record.rateLimitPerSecond, 10);
  t.notOk(JSON.stringify(record).includes(secret!.slice(6)), 'the plaintext is not in the record');
  const none = newRecord({ ...requestJson(), webhook: { authMethod: 'AUTH_METHOD_NONE' } });
  t.equal(none.secret, undefined, 'no secret for AUTH_METHOD_NONE');
  t.equal(none.record.webhook.auth.secretHash, null);
  const withoutWebhook = requestJson();
  delete withoutWebhook['webhook'];
  const legacy = newRecord(withoutWebhook);
  t.ok(legacy.secret, 'legacy (unset) gets a secret too');
  const a = createWorkflowRecord(validateCreateWorkflow(request()), { now: NOW });
  const b = createWorkflowRecord(validateCreateWorkflow(request()), { now: NOW });
  t.not(a.record.id, b.record.id, 'real randomness: distinct ids');
  t.not(a.secret, b.secret, 'and secrets');
});

t.test('a record as the proto message, in Connect JSON', async (t) => {
  const { record, secret } = newRecord();
  const created = toJson(WorkflowSchema, toProtoWorkflow(record, { baseUrl: BASE, now: NOW, secret }));
  t.same(created, {
    id: 'wf_22222222222222222222',
    name: 'Order sync',
    workspace: 'acme',
    nodes: [
      {
        id: 'fetch',
        code: 'return { n: data.input.count };',
        input: { count: '{{trigger.output.body.count}}', who: 'Hi {{trigger.output.query.user}}' },
        auth: { api_key: '[REDACTED]', nested: { token: '[REDACTED]', port: 443 } },
        limits: { timeoutMs: 5000, memoryBytes: '16777216' },
      },
      { id: 'send', code: 'return data.input;', input: { n: '{{nodes.fetch.output.n}}' }, auth: {}, limits: {} },
    ],
    webhook: {
      webhookId: 'wh_33333333333333333333',
      url: 'https://hooks.example.com/api/hooks/workflows/wf_22222222222222222222',
      authMethod: 'AUTH_METHOD_HEADER',
      secret,
      hasSecret: true,
    },
    rateLimitPerSecond: 10,
    createdAt: '2025-03-01T12:00:00Z',
    version: 1,
    updatedAt: '2025-03-01T12:00:00Z',
  });
  const read = toJson(WorkflowSchema, toProtoWorkflow(record, { baseUrl: BASE, now: NOW }));
  t.equal((read as { webhook: { secret?: string } }).webhook.secret, undefined, 'no secret when reading');
  const text = JSON.stringify(read);
  t.notOk(text.includes(record.webhook.auth.secretHash!), 'no hash');
  t.notOk(text.includes('k-123'), 'no auth value');
  t.same(record.nodes[0]?.auth, { api_key: 'k-123', nested: { token: 't', port: 443 } }, 'the record keeps the auth values');
});

t.test("webhook message: warnings and the previous secret's expiry", async (t) => {
  const { record } = newRecord();
  const rotated = rotateWebhookSecret(record.webhook.auth, { now: NOW });
  const r2: WorkflowRecord = { ...record, webhook: { ...record.webhook, auth: rotated.state } };
  const json = toJson(WorkflowSchema, create(WorkflowSchema, { webhook: toProtoWebhook(r2, { baseUrl: BASE, now: NOW, secret: rotated.secret }) })) as {
    webhook: Record<string, unknown>;
  };
  t.equal(json.webhook['secret'], rotated.secret);
  t.equal(json.webhook['previousSecretExpiresAt'], '2025-03-02T12:00:00Z');
  const later = toProtoWebhook(r2, { baseUrl: BASE, now: new Date('2025-03-02T12:00:00Z') });
  t.equal(later.previousSecretExpiresAt, undefined, 'not shown once expired');
  const orphan: WorkflowRecord = {
    ...record,
    webhook: { ...record.webhook, auth: { method: 'legacy', secretHash: null, previousSecretHash: null, previousSecretExpiresAt: null } },
  };
  const w = toProtoWebhook(orphan, { baseUrl: BASE, now: NOW });
  t.equal(w.authMethod, AuthMethod.UNSPECIFIED);
  t.equal(w.hasSecret, false);
  t.equal(w.warnings.length, 1, 'a warning for a legacy webhook without a secret');
});

t.test('grace period from the request, and page sizes', async (t) => {
  t.equal(gracePeriodFromProto(undefined), 24 * 60 * 60 * 1000);
  t.equal(gracePeriodFromProto(durationFromMs(3_600_000)), 3_600_000);
  t.equal(gracePeriodFromProto(durationFromMs(0)), 0);
  t.throws(() => gracePeriodFromProto(durationFromMs(-1000)), { message: 'gracePeriod must be from 0s to 2592000s (30 days), got -1s' });
  t.equal(resolvePageSize(0, WORKFLOW_PAGE_SIZE), 50);
  t.equal(resolvePageSize(7, WORKFLOW_PAGE_SIZE), 7);
  t.equal(resolvePageSize(10_000, WORKFLOW_PAGE_SIZE), 500);
  t.equal(resolvePageSize(0, EXECUTION_PAGE_SIZE), 20);
  t.equal(resolvePageSize(101, EXECUTION_PAGE_SIZE), 100);
});
