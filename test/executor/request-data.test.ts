/**
 * The request's own data end to end (real nats-server, gateway, executor and runner): the body depth
 * limit, failures caused by the data (one attempt, no retries), records that read whatever they hold,
 * and `__proto__` / `constructor` / `prototype` as plain keys (records read back over Connect JSON and binary included).
 */
import t from 'tap';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { fieldsOf } from '../helpers/protobuf-fields.js';
import { Kvm } from '@nats-io/kv';
import { MAX_BODY_DEPTH } from '../../gateway/webhook-payload.js';
import { executionKey } from '../../src/store/execution-repository.js';
import { TOO_DEEP_MARKER } from '../../src/store/execution-repository.js';
import { KV_BUCKETS } from '../../src/nats/streams.js';
import { newExecutionId } from '../../src/workflows/ids.js';
import { valueEntriesToJson } from '../../src/protobuf/struct-entries.js';
import { StructEntriesSchema, ValueEntriesSchema } from '../../src/gen/ldbox/runner/internal/v1/struct_entries_pb.js';
import {
  ExecutionSchema,
  GetExecutionRequestSchema,
  GetExecutionResponseSchema,
  ListExecutionsRequestSchema,
  NodeExecutionSchema,
  TriggerSchema,
} from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { ADMIN_TOKEN, gatewayFixture, hook, rpc } from '../gateway/harness.js';
import { testClient } from '../nats/util.js';
import { createFlow, getExecution, sharedRunner, sharedStack, waitForFinish } from './harness.js';

// Every end-to-end test here needs only workflows of its own: one stack for the file. Up to 5 attempts
// (the default, said explicitly) so that "one attempt" below means the executor chose not to retry.
const stack = sharedStack(t, { sharedRunner: sharedRunner(t), executorEnv: { LDBOX_EXECUTOR_MAX_ATTEMPTS: '5' } });

const nested = (depth: number): string => '{"a":'.repeat(depth - 1) + '{"leaf":1}' + '}'.repeat(depth - 1);

t.test('body depth: the limit runs end to end, one over is 400 body_too_deep, very deep is 400 and the gateway keeps serving', async (t) => {
  const s = await stack();
  const wf = await createFlow(s.base, [{ id: 'echo', code: 'return data.input', input: { body: '{{trigger.output.body}}' } }]);

  const at = await hook(s.base, wf.id, { body: nested(MAX_BODY_DEPTH), headers: { 'content-type': 'application/json' } });
  t.equal(at.status, 202, at.text);
  const ex = await waitForFinish(s.base, at.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED', JSON.stringify(ex.error));
  t.same(ex.nodes[0].output, { body: JSON.parse(nested(MAX_BODY_DEPTH)) }, 'a body at the limit comes back whole as the result');
  t.equal(ex.attempts, 1);

  const over = await hook(s.base, wf.id, { body: nested(MAX_BODY_DEPTH + 1), headers: { 'content-type': 'application/json' } });
  t.equal(over.status, 400);
  t.equal(over.json?.error?.code, 'body_too_deep');
  t.equal(over.json?.error?.message, 'request body nests objects/arrays more than 24 levels deep: flatten it or send deep parts as JSON strings');
});

t.test('very deep bodies are 400 body_too_deep (not 500) and the gateway keeps serving', async (t) => {
  const g = await gatewayFixture(t, { LDBOX_MAX_BODY_BYTES: String(1024 * 1024) });
  const wf = await createFlow(g.base, [{ id: 'echo', code: 'return data.input' }]);
  for (const depth of [6000, 100_000]) {
    const r = await hook(g.base, wf.id, { body: nested(depth), headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 400, `${depth} deep`);
    t.equal(r.json?.error?.code, 'body_too_deep', `${depth} deep`);
  }
  const arrays = await hook(g.base, wf.id, { body: `{"a":${'['.repeat(200_000)}${']'.repeat(200_000)}}`, headers: { 'content-type': 'application/json' } });
  t.equal(arrays.json?.error?.code, 'body_too_deep', 'arrays count as levels');
  const invalid = await hook(g.base, wf.id, { body: '['.repeat(100_000), headers: { 'content-type': 'application/json' } });
  t.equal(invalid.json?.error?.code, 'body_too_deep', 'unbalanced text is refused by depth before parsing');
  const brackets = await hook(g.base, wf.id, { body: { s: '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{{{{{{{{{{', 'k"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[': 1 } });
  t.equal(brackets.status, 202, 'brackets inside strings (and escaped quotes) are not levels');
  t.equal((await hook(g.base, wf.id, { body: { ok: true } })).status, 202, 'the gateway keeps serving');
  const list = await rpc(g.base, 'ListExecutions', { workflowId: wf.id });
  t.equal(list.status, 200);
  t.equal(list.json.executions.length, 2, 'only the accepted ones are queued');
});

t.test('failures caused by the data fail the node at once, with one attempt and a readable reason', async (t) => {
  const s = await stack();

  t.test('an input nested over 32 levels (template places the body deep)', async (t) => {
    let input: unknown = '{{trigger.output.body}}';
    for (let i = 0; i < 20; i++) input = { deeper: input };
    const wf = await createFlow(s.base, [{ id: 'deep', code: 'return 1', input: input as object }]);
    const r = await hook(s.base, wf.id, { body: nested(MAX_BODY_DEPTH), headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 202);
    const ex = await waitForFinish(s.base, r.json.executionId);
    t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
    t.equal(ex.attempts, 1, 'no retries');
    t.equal(ex.nodes[0].error.kind, 'NODE_ERROR_KIND_RUNNER');
    t.match(ex.error, /^node "deep" failed: the input is nested more than 32 levels deep: flatten it/);
  });

  t.test('a result nested too deep to deliver', async (t) => {
    const wf = await createFlow(s.base, [{ id: 'big', code: 'let a = 1; for (let i = 0; i < 40; i++) a = [a]; return a' }]);
    const r = await hook(s.base, wf.id, { body: {} });
    const ex = await waitForFinish(s.base, r.json.executionId);
    t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
    t.equal(ex.attempts, 1, 'no retries');
    t.equal(ex.nodes[0].error.codeError.kind, 'ERROR_KIND_INVALID_RESULT');
    t.match(ex.error, /nested 40 levels deep, over the limit of 32/);
  });
});

t.test('records read whatever they hold: deep values and odd keys written straight into KV', async (t) => {
  const s = await stack();
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return 1' }]);
  const nc = await testClient(t, s.nats.url, 'ldbox-test-writer').whenConnected();
  const kv = await new Kvm(nc).open(KV_BUCKETS.executions);
  const id = newExecutionId(new Date());
  const deepBody = nested(3000);
  const text =
    `{"id":"${id}","workflowId":"${wf.id}","workspace":"ws","status":"succeeded",` +
    `"trigger":{"body":{"__proto__":{"x":1},"constructor":"c","prototype":{"p":2},"deep":${deepBody}},"query":{}},` +
    `"nodes":[{"id":"a","status":"EXECUTION_STATUS_SUCCEEDED","startedAt":"2024-01-01T00:00:00Z","output":{"deep":${deepBody}}},{"id":7,"status":"nope"}],` +
    `"error":"","createdAt":"2024-01-01T00:00:00Z","startedAt":null,"finishedAt":"not a time","attempts":1,"costUnits":1,"charged":true}`;
  await kv.put(executionKey(wf.id, id), text);

  const ex = await getExecution(s.base, id);
  t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED');
  t.equal(ex.trigger.body.constructor, 'c');
  t.same(ex.trigger.body.prototype, { p: 2 });
  let v = ex.trigger.body.deep;
  let depth = 2;
  while (typeof v === 'object') {
    v = v.a;
    depth++;
  }
  t.equal(v, TOO_DEEP_MARKER, 'deep parts are replaced by the marker');
  t.equal(depth, 33);
  t.equal(ex.nodes.length, 2);
  t.equal(ex.nodes[0].id, 'a');
  t.match(ex.nodes[1].error.message, /stored entry cannot be read/);
  const list = await rpc(s.base, 'ListExecutions', { workflowId: wf.id });
  t.equal(list.status, 200, list.text);
  t.equal(list.json.executions.length, 1);
});

t.test('__proto__, constructor and prototype are plain keys from body to input to result to the record', async (t) => {
  const s = await stack();
  const wf = await createFlow(s.base, [
    {
      id: 'echo',
      code: 'return { input: data.input, own: Object.keys(data.input.whole), protoIsData: Object.getPrototypeOf(data.input.whole) === Object.prototype }',
      input: {
        whole: '{{trigger.output.body}}',
        picked: '{{trigger.output.body.__proto__.x}}',
        ctor: '{{trigger.output.body.constructor}}',
        q: '{{trigger.output.query.__proto__}}',
      },
    },
    { id: 'next', code: 'return Object.keys(data.input.prev)', input: { prev: '{{nodes.echo.output.input.whole}}' } },
  ]);
  const body = '{"__proto__":{"x":1},"constructor":"c","prototype":{"p":2}}';
  const r = await hook(s.base, wf.id, { body, query: '__proto__=q&constructor=k', headers: { 'content-type': 'application/json' } });
  t.equal(r.status, 202);
  const ex = await waitForFinish(s.base, r.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED', JSON.stringify(ex.error));
  t.same(ex.nodes[0].output.own, ['__proto__', 'constructor', 'prototype'], 'the node input has all three as own keys');
  t.equal(ex.nodes[0].output.protoIsData, true, 'no prototype was changed');
  t.equal(ex.nodes[0].output.input.picked, 1, 'a template reads through __proto__ as data');
  t.equal(ex.nodes[0].output.input.ctor, 'c');
  t.equal(ex.nodes[0].output.input.q, 'q');
  t.same(ex.nodes[1].output, ['__proto__', 'constructor', 'prototype'], "a result's __proto__ key reaches the next node");

  // The stored record, read as JSON text.
  const nc = await testClient(t, s.nats.url, 'ldbox-test-reader').whenConnected();
  const kv = await new Kvm(nc).open(KV_BUCKETS.executions);
  const stored = JSON.parse((await kv.get(executionKey(wf.id, r.json.executionId)))!.string());
  t.same(Object.keys(stored.trigger.body), ['__proto__', 'constructor', 'prototype']);
  t.same(Object.keys(stored.nodes[0].output.input.whole), ['__proto__', 'constructor', 'prototype'], 'the recorded output keeps the key');
  t.same(stored.nodes[0].output.input.whole, JSON.parse(body));
});

t.test('GetExecution and ListExecutions give __proto__, constructor and prototype back as own keys, in JSON and binary', async (t) => {
  const s = await stack();
  const wf = await createFlow(s.base, [{ id: 'echo', code: 'return data.input', input: { whole: '{{trigger.output.body}}' } }]);
  const body =
    '{"__proto__":{"x":1,"__proto__":{"polluted":true}},"constructor":{"prototype":{"__proto__":"s"}},' +
    '"prototype":{"p":2},"list":[{"__proto__":null},{"constructor":[1]}]}';
  const r = await hook(s.base, wf.id, { body, query: '__proto__=q&constructor=k', headers: { 'content-type': 'application/json' } });
  t.equal(r.status, 202, r.text);
  const id = r.json.executionId;
  t.equal((await waitForFinish(s.base, id)).status, 'EXECUTION_STATUS_SUCCEEDED');
  const expected = JSON.stringify(JSON.parse(body));

  const checkJson = (what: string, ex: any): void => {
    t.equal(JSON.stringify(ex.trigger.body), expected, `${what}: the body with every key`);
    t.same(Object.keys(ex.trigger.body), ['__proto__', 'constructor', 'prototype', 'list'], `${what}: own keys`);
    t.equal(Object.getPrototypeOf(ex.trigger.body), Object.prototype, `${what}: no prototype set`);
    t.equal(JSON.stringify(ex.trigger.query), '{"__proto__":"q","constructor":"k"}', `${what}: the query`);
    t.equal(JSON.stringify(ex.nodes[0].output.whole), expected, `${what}: the node output`);
  };
  const got = await rpc(s.base, 'GetExecution', { id });
  t.equal(got.status, 200, got.text);
  checkJson('GetExecution', got.json.execution);
  t.notMatch(got.text, /__proto__[0-9a-f]{32}/, 'no stand-in key leaks');
  const list = await rpc(s.base, 'ListExecutions', { workflowId: wf.id });
  t.equal(list.status, 200, list.text);
  checkJson('ListExecutions', list.json.executions[0]);

  // Connect binary: the bytes, read as entries (every key kept), and protobuf-es's own reading of them.
  const proto = async (method: string, bytes: Uint8Array): Promise<Uint8Array> => {
    const res = await fetch(`${s.base}/ldbox.workflows.v1.WorkflowService/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/proto', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: new Uint8Array(bytes),
    });
    t.equal(res.status, 200, `${method} over application/proto`);
    return new Uint8Array(await res.arrayBuffer());
  };
  const asJson = (entries: Uint8Array, kind: 'struct' | 'value'): string =>
    JSON.stringify(
      valueEntriesToJson(
        kind === 'value'
          ? fromBinary(ValueEntriesSchema, entries)
          : create(ValueEntriesSchema, { kind: { case: 'structValue', value: fromBinary(StructEntriesSchema, entries) } }),
      ),
    );
  const checkBinary = (what: string, execution: Uint8Array): void => {
    const trigger = fieldsOf(execution, ExecutionSchema.field.trigger!.number)[0]!;
    t.equal(asJson(fieldsOf(trigger, TriggerSchema.field.body!.number)[0]!, 'value'), expected, `${what} (binary): the body with every key`);
    t.equal(asJson(fieldsOf(trigger, TriggerSchema.field.query!.number)[0]!, 'struct'), '{"__proto__":"q","constructor":"k"}', `${what} (binary): the query`);
    const node = fieldsOf(execution, ExecutionSchema.field.nodes!.number)[0]!;
    t.equal(asJson(fieldsOf(node, NodeExecutionSchema.field.output!.number)[0]!, 'value'), `{"whole":${expected}}`, `${what} (binary): the node output`);
  };
  const getBytes = await proto('GetExecution', toBinary(GetExecutionRequestSchema, create(GetExecutionRequestSchema, { id })));
  checkBinary('GetExecution', fieldsOf(getBytes, 1)[0]!);
  const decoded = fromBinary(GetExecutionResponseSchema, getBytes);
  t.same((toJson(ValueSchema, decoded.execution!.trigger!.body!) as { prototype: unknown }).prototype, { p: 2 }, 'a protobuf client reads the rest as before');
  const listBytes = await proto('ListExecutions', toBinary(ListExecutionsRequestSchema, create(ListExecutionsRequestSchema, { workflowId: wf.id })));
  checkBinary('ListExecutions', fieldsOf(listBytes, 1)[0]!);

  const probe: Record<string, unknown> = {};
  t.equal(probe.polluted, undefined, 'Object.prototype untouched');
  t.equal(probe.x, undefined, 'Object.prototype untouched');
});
