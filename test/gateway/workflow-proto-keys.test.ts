/**
 * `__proto__`, `constructor` and `prototype` as plain keys of a workflow definition, end to end (real
 * nats-server, gateway, executor and runner over sockets): a node's `input` template and `auth` holding them
 * (nested, inside arrays) survive CreateWorkflow sent as Connect JSON, Connect binary (plain and gzip) and
 * gRPC-Web; storage; GetWorkflow and ListWorkflows answered as JSON and binary; and the rendered input the
 * runner hands the node's code.
 */
import t from 'tap';
import { gzipSync } from 'node:zlib';
import { create, fromBinary, fromJsonString, toBinary } from '@bufbuild/protobuf';
import { fieldsOf } from '../helpers/protobuf-fields.js';
import { Kvm } from '@nats-io/kv';
import { StructEntriesSchema } from '../../src/gen/ldbox/runner/internal/v1/struct_entries_pb.js';
import {
  AuthMethod,
  CreateWorkflowRequestSchema,
  GetWorkflowRequestSchema,
  ListWorkflowsRequestSchema,
  ListWorkflowsResponseSchema,
  NodeSchema,
  WorkflowSchema,
} from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { structUnknownField } from '../../src/json/proto-keys.js';
import { KV_BUCKETS } from '../../src/nats/streams.js';
import { structEntriesToJson } from '../../src/protobuf/struct-entries.js';
import { sharedRunner, stackFixture, waitForFinish } from '../executor/harness.js';
import { testClient } from '../nats/util.js';
import { ADMIN_TOKEN, hook, rpc } from './harness.js';

/** The template: the three keys at the top, nested, inside arrays, holding templates and holding nothing. */
const INPUT_TEXT =
  '{"__proto__":{"x":"{{trigger.output.body.a}}","__proto__":{"deep":1}},' +
  '"constructor":{"prototype":["{{trigger.output.body.a}}",{"__proto__":"p","constructor":{"__proto__":[]}}]},' +
  '"prototype":{"p":2},"list":[{"__proto__":null},{"constructor":[1]},[{"__proto__":{"prototype":"{{ trigger.output.body.a }}"}}]],' +
  '"plain":"{{trigger.output.body.a}}"}';
/** What the runner gets for a body `{"a":"A"}`. */
const RENDERED_TEXT = INPUT_TEXT.replaceAll('{{trigger.output.body.a}}', 'A').replace('{{ trigger.output.body.a }}', 'A');
const AUTH_TEXT = '{"__proto__":{"token":"token-s3cret"},"constructor":"ctor-s3cret"}';
/** `auth` as answers show it. */
const AUTH_SHOWN = '{"__proto__":{"token":"[REDACTED]"},"constructor":"[REDACTED]"}';
const TOP_KEYS = ['__proto__', 'constructor', 'prototype', 'list', 'plain'];
const CODE =
  'return { input: data.input, own: Object.keys(data.input), inner: Object.keys(data.input.__proto__),' +
  ' protoIsData: Object.getPrototypeOf(data.input) === Object.prototype, authKeys: Object.keys(data.auth) }';

const createJson = (name: string): string =>
  `{"name":"${name}","workspace":"ws","nodes":[{"id":"echo","code":${JSON.stringify(CODE)},"input":${INPUT_TEXT},"auth":${AUTH_TEXT}}],` +
  '"webhook":{"authMethod":"AUTH_METHOD_NONE"}}';

/** The binary request; protobuf-es cannot write a Struct with a `__proto__` key, so input and auth go as raw fields. */
function createBinary(name: string): Uint8Array {
  const req = create(CreateWorkflowRequestSchema, { name, workspace: 'ws', nodes: [{ id: 'echo', code: CODE }], webhook: { authMethod: AuthMethod.NONE } });
  req.nodes[0]!.$unknown = [
    structUnknownField(NodeSchema.field.input!.number, JSON.parse(INPUT_TEXT)),
    structUnknownField(NodeSchema.field.auth!.number, JSON.parse(AUTH_TEXT)),
  ];
  return toBinary(CreateWorkflowRequestSchema, req);
}

type Variant = 'json' | 'proto' | 'proto+gzip' | 'grpc-web';

// The file's runner, a process of its own (harness.ts: one in this process runs under tap's slow module loader).
const runner = sharedRunner(t);

t.test('a workflow whose node input and auth hold __proto__, constructor and prototype keeps them end to end', async (t) => {
  const s = await stackFixture(t, { runner: await runner() });
  const url = (method: string) => `${s.base}/ldbox.workflows.v1.WorkflowService/${method}`;

  t.test('protobuf-es on its own loses the key in both request forms (why the gateway reads them again)', async (t) => {
    t.notOk(Object.hasOwn(fromJsonString(CreateWorkflowRequestSchema, createJson('x')).nodes[0]!.input!, '__proto__'));
    t.notOk(Object.hasOwn(fromBinary(CreateWorkflowRequestSchema, createBinary('x')).nodes[0]!.input!, '__proto__'));
  });

  /** An application/proto call; the response message bytes. */
  const proto = async (method: string, bytes: Uint8Array): Promise<Uint8Array> => {
    const res = await fetch(url(method), {
      method: 'POST',
      headers: { 'content-type': 'application/proto', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: new Uint8Array(bytes),
    });
    const out = new Uint8Array(await res.arrayBuffer());
    t.equal(res.status, 200, `${method} over application/proto`, { body: res.status === 200 ? '' : Buffer.from(out).toString() });
    return out;
  };

  /** CreateWorkflow sent as `variant`; the Workflow message of the answer, as bytes (binary) or JSON. */
  const createAs = async (variant: Variant): Promise<{ id: string; json?: any; bytes?: Uint8Array }> => {
    if (variant === 'json') {
      const res = await fetch(url('CreateWorkflow'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: createJson(variant),
      });
      const text = await res.text();
      t.equal(res.status, 200, text);
      t.notMatch(text, /__proto__[0-9a-f]{32}/, 'no stand-in key leaks');
      const json = JSON.parse(text).workflow;
      return { id: json.id, json };
    }
    if (variant === 'grpc-web') {
      const message = createBinary(variant);
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      frame.set(message, 5);
      const res = await fetch(url('CreateWorkflow'), {
        method: 'POST',
        headers: { 'content-type': 'application/grpc-web+proto', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: frame,
      });
      const body = Buffer.from(await res.arrayBuffer());
      t.equal(res.status, 200);
      t.equal(body[0], 0, 'a data frame first', { body: body[0] === 0 ? '' : body.toString() });
      const bytes = fieldsOf(body.subarray(5, 5 + body.readUInt32BE(1)), 1)[0]!;
      return { id: fromBinary(WorkflowSchema, bytes).id, bytes };
    }
    const gzip = variant === 'proto+gzip';
    const res = await fetch(url('CreateWorkflow'), {
      method: 'POST',
      headers: { 'content-type': 'application/proto', authorization: `Bearer ${ADMIN_TOKEN}`, ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
      body: new Uint8Array(gzip ? gzipSync(createBinary(variant)) : createBinary(variant)),
    });
    const body = new Uint8Array(await res.arrayBuffer());
    t.equal(res.status, 200, `CreateWorkflow over ${variant}`, { body: res.status === 200 ? '' : Buffer.from(body).toString() });
    const bytes = fieldsOf(body, 1)[0]!;
    return { id: fromBinary(WorkflowSchema, bytes).id, bytes };
  };

  const checkObject = (what: string, o: any, text: string, keys: string[]): void => {
    t.equal(JSON.stringify(o), text, `${what}: every key, in order`);
    t.same(Object.keys(o), keys, `${what}: own keys`);
    t.equal(Object.getPrototypeOf(o), Object.prototype, `${what}: a normal prototype`);
  };
  const checkJson = (what: string, workflow: any): void => {
    checkObject(`${what} (JSON) input`, workflow.nodes[0].input, JSON.stringify(JSON.parse(INPUT_TEXT)), TOP_KEYS);
    checkObject(`${what} (JSON) auth`, workflow.nodes[0].auth, AUTH_SHOWN, ['__proto__', 'constructor']);
  };
  const checkBinary = (what: string, workflow: Uint8Array): void => {
    const node = fieldsOf(workflow, WorkflowSchema.field.nodes!.number)[0]!;
    const struct = (no: number) => structEntriesToJson(fromBinary(StructEntriesSchema, fieldsOf(node, no)[0]!));
    checkObject(`${what} (binary) input`, struct(NodeSchema.field.input!.number), JSON.stringify(JSON.parse(INPUT_TEXT)), TOP_KEYS);
    checkObject(`${what} (binary) auth`, struct(NodeSchema.field.auth!.number), AUTH_SHOWN, ['__proto__', 'constructor']);
    t.same(fromBinary(WorkflowSchema, workflow).nodes[0]!.input!.prototype, { p: 2 }, `${what}: a protobuf client reads the rest as before`);
  };

  const nc = await testClient(t, s.nats.url, 'ldbox-test-reader').whenConnected();
  const stored = await new Kvm(nc).open(KV_BUCKETS.workflows);

  for (const variant of ['json', 'proto', 'proto+gzip', 'grpc-web'] as const) {
    t.test(`created over ${variant}`, async (t) => {
      const made = await createAs(variant);
      if (made.json) checkJson('CreateWorkflow', made.json);
      else checkBinary('CreateWorkflow', made.bytes!);

      const record = JSON.parse((await stored.get(made.id))!.string());
      checkObject('the stored template', record.nodes[0].input, JSON.stringify(JSON.parse(INPUT_TEXT)), TOP_KEYS);

      const got = await rpc(s.base, 'GetWorkflow', { id: made.id });
      t.equal(got.status, 200, 'GetWorkflow over JSON', { body: got.status === 200 ? '' : got.text });
      t.notMatch(got.text, /__proto__[0-9a-f]{32}/, 'no stand-in key leaks');
      checkJson('GetWorkflow', got.json.workflow);
      checkBinary(
        'GetWorkflow',
        fieldsOf(await proto('GetWorkflow', toBinary(GetWorkflowRequestSchema, create(GetWorkflowRequestSchema, { id: made.id }))), 1)[0]!,
      );

      const list = await rpc(s.base, 'ListWorkflows', { workspace: 'ws', pageSize: 500 });
      t.equal(list.status, 200, 'ListWorkflows over JSON', { body: list.status === 200 ? '' : list.text });
      checkJson(
        'ListWorkflows',
        list.json.workflows.find((w: any) => w.id === made.id),
      );
      const listBytes = await proto(
        'ListWorkflows',
        toBinary(ListWorkflowsRequestSchema, create(ListWorkflowsRequestSchema, { workspace: 'ws', pageSize: 500 })),
      );
      const at = fromBinary(ListWorkflowsResponseSchema, listBytes).workflows.findIndex((w) => w.id === made.id);
      t.ok(at >= 0, 'listed');
      checkBinary('ListWorkflows', fieldsOf(listBytes, 1)[at]!);

      // A run: what the runner handed the node's code, which returns it (and what it saw) as its result.
      const r = await hook(s.base, made.id, { body: { a: 'A' } });
      t.equal(r.status, 202, 'the webhook took the call', { body: r.text });
      const ex = await waitForFinish(s.base, r.json.executionId);
      t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED', JSON.stringify(ex.error));
      const out = ex.nodes[0].output;
      t.equal(JSON.stringify(out.input), JSON.stringify(JSON.parse(RENDERED_TEXT)), 'the rendered input, every key kept');
      t.same(out.own, TOP_KEYS, 'the node saw them as own keys');
      t.same(out.inner, ['x', '__proto__'], 'nested too');
      t.equal(out.protoIsData, true, "the input's prototype is the normal one");
      t.same(out.authKeys, ['__proto__', 'constructor'], 'auth keeps them too');
    });
  }

  t.test('Object.prototype untouched', async (t) => {
    const probe: Record<string, unknown> = {};
    for (const key of ['x', 'deep', 'p', 'token', 'prototype']) t.equal(probe[key], undefined, key);
  });
});
