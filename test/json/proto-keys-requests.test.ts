/**
 * src/json/proto-keys-requests.ts on its own: which requests are walked, and the Struct fields it puts back
 * from JSON text and from binary (lists, nested, `\u` escapes, a singular field sent twice). The end-to-end
 * path (gateway, storage, runner) is test/gateway/workflow-proto-keys.test.ts.
 */
import { create, fromBinary, fromJsonString, toBinary } from '@bufbuild/protobuf';
import t from 'tap';
import { CreateWorkflowRequestSchema, GetWorkflowRequestSchema, NodeSchema } from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { structUnknownField } from '../../src/json/proto-keys.js';
import { carriesStructs, keepProtoKeysOfRequest } from '../../src/json/proto-keys-requests.js';

const INPUT = '{"__proto__":{"a":[{"__proto__":1}]},"constructor":"c"}';

t.test('only requests that can hold a Struct are walked', async (t) => {
  t.equal(carriesStructs(CreateWorkflowRequestSchema), true);
  t.equal(carriesStructs(GetWorkflowRequestSchema), false);
});

t.test('JSON: the fields that lost a key come back from the text, the rest stays protobuf-es', async (t) => {
  const text = `{"name":"n","workspace":"w","nodes":[{"id":"a","code":"x","input":{"k":1}},{"id":"b","code":"y","input":${INPUT}}]}`;
  const msg = fromJsonString(CreateWorkflowRequestSchema, text);
  const untouched = msg.nodes[0]!.input;
  keepProtoKeysOfRequest(CreateWorkflowRequestSchema, msg, Buffer.from(text), 'json');
  t.equal(msg.nodes[0]!.input, untouched, 'a Struct without the key is left as it was');
  t.equal(JSON.stringify(msg.nodes[1]!.input), INPUT);
  t.same(Object.keys(msg.nodes[1]!.input!), ['__proto__', 'constructor']);
  t.equal(Object.getPrototypeOf(msg.nodes[1]!.input), Object.prototype);

  const escaped = '{"name":"n","workspace":"w","nodes":[{"id":"a","code":"x","input":{"\\u005f_proto__":2}}]}';
  const m2 = fromJsonString(CreateWorkflowRequestSchema, escaped);
  keepProtoKeysOfRequest(CreateWorkflowRequestSchema, m2, Buffer.from(escaped), 'json');
  t.equal(JSON.stringify(m2.nodes[0]!.input), '{"__proto__":2}', 'a key spelled with an escape too');
});

t.test('binary: read again as entries; a singular Struct sent twice is merged as protobuf merges it', async (t) => {
  const req = create(CreateWorkflowRequestSchema, {
    name: 'n',
    workspace: 'w',
    nodes: [
      { id: 'a', code: 'x' },
      { id: 'b', code: 'y', input: { k: 1 } },
    ],
  });
  const no = NodeSchema.field.input!.number;
  req.nodes[0]!.$unknown = [structUnknownField(no, { first: true }), structUnknownField(no, JSON.parse(INPUT))];
  const bytes = toBinary(CreateWorkflowRequestSchema, req);
  const msg = fromBinary(CreateWorkflowRequestSchema, bytes);
  t.notOk(Object.hasOwn(msg.nodes[0]!.input!, '__proto__'), 'protobuf-es lost it');
  keepProtoKeysOfRequest(CreateWorkflowRequestSchema, msg, bytes, 'binary');
  t.equal(JSON.stringify(msg.nodes[0]!.input), `{"first":true,${INPUT.slice(1)}`);
  t.same(msg.nodes[1]!.input, { k: 1 }, 'the other node as protobuf-es read it');
  t.equal(msg.name, 'n');
  const probe: Record<string, unknown> = {};
  t.equal(probe.a, undefined, 'Object.prototype untouched');
});
