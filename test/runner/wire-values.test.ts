/**
 * Values that protobuf-es's Struct conversion would mangle, through Execute on both of the runner's
 * own paths (binary gRPC from @grpc/grpc-js, Connect JSON over HTTP/1.1 and HTTP/2):
 * - `__proto__`, `constructor` and `prototype` keys, in `input`/`auth` and in the returned value, arrive
 *   as plain data (runner/wire/struct-entries.ts, execute-request.ts, execute-response.ts);
 * - an enum value that is not in the proto is refused with INVALID_ARGUMENT naming the field, never run
 *   as the default (a JSON name, or a binary number).
 * The client sides keep every key too: the gRPC request is encoded and the response read through the
 * entries views of ldbox.runner.internal.v1, which protobuf's map semantics make wire-compatible.
 */
import http2 from 'node:http2';
import { create, fromBinary, toBinary, type JsonObject } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { Code } from '@connectrpc/connect';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { valueEntriesToJson } from '../../src/protobuf/struct-entries.js';
import {
  ExecuteRequestDataSchema,
  type StructEntries,
  ValueEntriesSchema,
  type ValueEntries,
} from '../../src/gen/ldbox/runner/internal/v1/struct_entries_pb.js';
import { ExecuteRequestSchema, ExecuteResponseSchema, type ResultKind } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { connectError, grpcError, startTestRunner } from '../helpers/runner-harness.js';

const runner = await startTestRunner({ LDBOX_MAX_CODE_BYTES: '4096', LDBOX_MAX_INPUT_BYTES: '1024' });
t.teardown(() => runner.close());

/** An object whose `__proto__` key is data (JSON.parse defines keys; an object literal would not). */
const HOSTILE_KEYS = '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":1}},"prototype":"p","plain":1}';

// ---------------------------------------------------------------------- the gRPC client, keeping keys

function valueEntries(v: unknown): ValueEntries {
  if (v === null) return create(ValueEntriesSchema, { kind: { case: 'nullValue', value: 0 } });
  if (typeof v === 'number') return create(ValueEntriesSchema, { kind: { case: 'numberValue', value: v } });
  if (typeof v === 'string') return create(ValueEntriesSchema, { kind: { case: 'stringValue', value: v } });
  if (typeof v === 'boolean') return create(ValueEntriesSchema, { kind: { case: 'boolValue', value: v } });
  if (Array.isArray(v)) return create(ValueEntriesSchema, { kind: { case: 'listValue', value: { values: v.map(valueEntries) } } });
  return create(ValueEntriesSchema, { kind: { case: 'structValue', value: structEntries(v as Record<string, unknown>) } });
}

function structEntries(o: Record<string, unknown>): StructEntries {
  return {
    $typeName: 'ldbox.runner.internal.v1.StructEntries',
    fields: Object.keys(o).map((key) => ({ $typeName: 'ldbox.runner.internal.v1.StructEntry', key, value: valueEntries(o[key]) })),
  };
}

/**
 * An ExecuteRequest's bytes: `code` (and the rest) through the generated schema, `input`/`auth` through
 * the entries view. Two encoded messages concatenated are one message with the fields of both.
 */
function requestBytes(init: { code: string; input?: object; auth?: object; resultKind?: number }): Buffer {
  const head = toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { code: init.code, resultKind: init.resultKind ?? 0 }));
  const data = create(ExecuteRequestDataSchema);
  if (init.input) data.input = structEntries(init.input as Record<string, unknown>);
  if (init.auth) data.auth = structEntries(init.auth as Record<string, unknown>);
  return Buffer.concat([head, toBinary(ExecuteRequestDataSchema, data)]);
}

/** The response's `result` (field 2), read through the entries view: every key kept. */
function resultKeepingKeys(bytes: Buffer): unknown {
  const reader = new BinaryReader(bytes);
  let result: unknown;
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    if (no === 2) result = valueEntriesToJson(fromBinary(ValueEntriesSchema, reader.bytes()));
    else reader.skip(wireType);
  }
  return result;
}

/** Execute through @grpc/grpc-js with the codecs above; resolves with the response's bytes. */
function grpcExecute(body: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    runner.grpc.raw.makeUnaryRequest(
      '/ldbox.runner.v1.RunnerService/Execute',
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      new grpc.Metadata(),
      {},
      (err, res) => (err ? reject(err) : resolve(res!)),
    );
  });
}

// ------------------------------------------------------------------------------ Connect JSON, raw

/** A Connect unary JSON call over HTTP/1.1 (fetch); the answer's status and text. */
async function connectJson(body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${runner.url}/ldbox.runner.v1.RunnerService/Execute`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'connect-protocol-version': '1' },
    body,
  });
  return { status: res.status, text: await res.text() };
}

/** The same over HTTP/2. */
function connectJsonH2(body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(runner.url);
    session.on('error', reject);
    const stream = session.request({ ':method': 'POST', ':path': '/ldbox.runner.v1.RunnerService/Execute', 'content-type': 'application/json' });
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('close', () => {
      session.close();
      resolve({ status, text: Buffer.concat(chunks).toString() });
    });
    stream.end(body);
  });
}

const ownKeys = (v: unknown) => Object.keys(v as object);

t.test('__proto__, constructor and prototype keys returned by the code', async (t) => {
  const code = `return JSON.parse(${JSON.stringify(HOSTILE_KEYS)})`;
  const expected = JSON.parse(HOSTILE_KEYS) as JsonObject;

  const viaGrpc = resultKeepingKeys(await grpcExecute(requestBytes({ code })));
  t.same(ownKeys(viaGrpc), ['__proto__', 'constructor', 'prototype', 'plain'], 'gRPC: every key, in order');
  t.same(JSON.stringify(viaGrpc), HOSTILE_KEYS, 'gRPC: as data');
  t.equal(Object.getPrototypeOf(viaGrpc), Object.prototype, 'the prototype of the client object is untouched');

  for (const [what, send] of [
    ['HTTP/1.1', connectJson],
    ['HTTP/2', connectJsonH2],
  ] as const) {
    const { status, text } = await send(JSON.stringify({ code }));
    t.equal(status, 200, `Connect JSON ${what}: 200`);
    const result = (JSON.parse(text) as { result: unknown }).result;
    t.same(JSON.stringify(result), JSON.stringify(expected), `Connect JSON ${what}: every key as data`);
  }
});

t.test('__proto__, constructor and prototype keys in input and auth', async (t) => {
  // The code reports what it saw as a string, which no Struct conversion on the way back can change.
  const code = 'return JSON.stringify([data.input, Object.keys(data.input), Object.getPrototypeOf(data.input) === Object.prototype, data.auth])';
  const input = JSON.parse(HOSTILE_KEYS) as object;
  const auth = JSON.parse('{"__proto__":"s3cret-token-value"}') as object;
  const seen = JSON.stringify([input, ['__proto__', 'constructor', 'prototype', 'plain'], true, auth]);

  const viaGrpc = resultKeepingKeys(await grpcExecute(requestBytes({ code, input, auth })));
  t.equal(viaGrpc, seen, 'gRPC: the sandbox sees every key as data');

  const json = `{"code":${JSON.stringify(code)},"input":${HOSTILE_KEYS},"auth":{"__proto__":"s3cret-token-value"}}`;
  for (const [what, send] of [
    ['HTTP/1.1', connectJson],
    ['HTTP/2', connectJsonH2],
  ] as const) {
    const { status, text } = await send(json);
    t.equal(status, 200, `Connect JSON ${what}: 200`);
    t.equal((JSON.parse(text) as { result: unknown }).result, seen, `Connect JSON ${what}: the sandbox sees every key`);
  }
  const escaped = await connectJson(`{"code":"return Object.keys(data.input)","input":{"\\u005f_proto__":1}}`);
  t.same((JSON.parse(escaped.text) as { result: unknown }).result, ['__proto__'], 'a key spelled with a \\u escape');

  const logged = await connectJson(`{"code":"ld.log(data.auth.__proto__); return 1","auth":{"__proto__":"s3cret-token-value"}}`);
  t.match(logged.text, /"message":"\[REDACTED\]"/, 'an auth value under __proto__ is still redacted in logs');
});

t.test('an enum value not in the proto', async (t) => {
  const nope = await connectJson('{"code":"return 1","resultKind":"NOPE"}');
  t.equal(nope.status, 400, 'Connect JSON name: HTTP 400');
  t.same(JSON.parse(nope.text), { code: 'invalid_argument', message: 'resultKind "NOPE" is not a known ResultKind' }, 'invalid_argument naming the field');
  const nopeH2 = await connectJsonH2('{"code":"return 1","result_kind":"RESULT_KIND_NOPE"}');
  t.same(
    [nopeH2.status, JSON.parse(nopeH2.text)],
    [400, { code: 'invalid_argument', message: 'resultKind "RESULT_KIND_NOPE" is not a known ResultKind' }],
    'by its proto name, over HTTP/2',
  );
  const number = await connectJson('{"code":"return 1","resultKind":7}');
  t.same(JSON.parse(number.text), { code: 'invalid_argument', message: 'resultKind 7 is not a known ResultKind' }, 'Connect JSON number');
  const known = await connectJson('{"code":"return 1","resultKind":"RESULT_KIND_GENERIC"}');
  t.equal(known.status, 200, 'a known name runs');

  const viaGrpc = await grpcError(grpcExecute(requestBytes({ code: 'return 1', resultKind: 42 })));
  t.same([viaGrpc?.code, viaGrpc?.details], [grpc.status.INVALID_ARGUMENT, 'resultKind 42 is not a known ResultKind'], 'gRPC (grpc-js): a binary number');
  const viaConnectGrpc = await connectError(runner.connectGrpc.execute({ code: 'return 1', resultKind: 42 as ResultKind }));
  t.same([viaConnectGrpc?.code, viaConnectGrpc?.rawMessage], [Code.InvalidArgument, 'resultKind 42 is not a known ResultKind'], "gRPC (connect-node's client)");
});

t.test('a response read by the generated schema is still well-formed', async (t) => {
  const bytes = await grpcExecute(requestBytes({ code: `return JSON.parse(${JSON.stringify(HOSTILE_KEYS)})` }));
  const res = fromBinary(ExecuteResponseSchema, bytes);
  t.equal(res.error, undefined, 'no error');
  t.ok(res.result?.kind.case === 'structValue', 'a struct');
});

t.test('Connect unary: a body over the limit, and a truncated one', async (t) => {
  // This runner's limit: 4096 of code + 2 × 1024 of input + 64 KiB (execute-route.ts).
  const max = 4096 + 2 * 1024 + 64 * 1024;
  const body = JSON.stringify({ code: `return 1 // ${'x'.repeat(max)}` });
  const big = await connectJson(body);
  t.equal(big.status, 429, 'HTTP 429');
  t.same(JSON.parse(big.text), {
    code: 'resource_exhausted',
    message: `the request message is ${Buffer.byteLength(body)} bytes, over the limit of ${max} bytes`,
  });
  const cut = await connectJson('{"code":"return 1"');
  t.equal(cut.status, 400, 'a JSON body cut short: HTTP 400');
  t.match(JSON.parse(cut.text), { code: 'invalid_argument', message: /^cannot decode message ldbox\.runner\.v1\.ExecuteRequest from JSON/ });
  const ok = await connectJson('{"code":"return 1"}');
  t.equal(ok.status, 200, 'the next call on the runner succeeds');
});
