/**
 * The hand-written ExecuteStream envelope (src/protobuf/execute-stream-wire.ts) against protobuf-es and
 * runner.proto: what it writes is byte for byte what protobuf-es writes, what protobuf-es writes it reads
 * back the same (also with fields reordered, unknown fields and repeated scalars), and bytes that are not
 * such a message are refused with StreamWireError, never a crash or a wrong value. Also the gRPC framing
 * reader: messages split anywhere across chunks, several in one chunk, a compressed flag, an oversized length.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import t from 'tap';
import {
  ExecuteRequestSchema,
  ExecuteResponseSchema,
  ExecuteStreamRequestSchema,
  ExecuteStreamResponseSchema,
} from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import {
  decodeStreamRequest,
  decodeStreamResponse,
  encodeStreamCall,
  encodeStreamCancel,
  encodeStreamResponse,
  encodeStreamStatus,
  GRPC_FRAME_HEADER,
  GrpcMessageReader,
  StreamWireError,
} from '../../src/protobuf/execute-stream-wire.js';

const request = toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { code: 'return data.input.n', input: { n: 1, s: 'é' }, requestId: 'r-1' }));
const response = toBinary(ExecuteResponseSchema, create(ExecuteResponseSchema, { requestId: 'r-1', result: { kind: { case: 'numberValue', value: 2 } } }));

/** The body of a framed message, its header checked. */
function body(framed: Uint8Array): Uint8Array {
  t.equal(framed[0], 0, 'not compressed');
  t.equal(new DataView(framed.buffer, framed.byteOffset).getUint32(1), framed.length - GRPC_FRAME_HEADER, 'the frame length is the body length');
  return framed.subarray(GRPC_FRAME_HEADER);
}

/** Bytes as hex, so that a Buffer and a Uint8Array of the same bytes compare equal. */
const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

const IDS = [1, 127, 128, 16_383, 16_384, 2 ** 31, 0xffff_ffff];

t.test('a call, a cancel, a response and a status are the bytes protobuf-es writes', async (t) => {
  for (const callId of IDS) {
    for (const timeoutMs of [0, 1, 300, 2 ** 31 - 1, 0xffff_ffff]) {
      const want = toBinary(
        ExecuteStreamRequestSchema,
        create(ExecuteStreamRequestSchema, { callId, request: fromBinary(ExecuteRequestSchema, request), timeoutMs }),
      );
      t.equal(hex(body(encodeStreamCall(callId, request, timeoutMs))), hex(want), `call ${callId}, timeout ${timeoutMs}`);
    }
    t.equal(
      hex(body(encodeStreamCancel(callId))),
      hex(toBinary(ExecuteStreamRequestSchema, create(ExecuteStreamRequestSchema, { callId, cancel: true }))),
      `cancel ${callId}`,
    );
    const wantResponse = create(ExecuteStreamResponseSchema, { callId, outcome: { case: 'response', value: fromBinary(ExecuteResponseSchema, response) } });
    t.equal(hex(body(encodeStreamResponse(callId, response))), hex(toBinary(ExecuteStreamResponseSchema, wantResponse)), `response ${callId}`);
    for (const [code, message] of [
      [3, 'the message has no request'],
      [16, ''],
      [14, 'ünïcode ✓ and a long one '.repeat(20)],
    ] as const) {
      const wantStatus = create(ExecuteStreamResponseSchema, { callId, outcome: { case: 'status', value: { code, message } } });
      t.equal(hex(body(encodeStreamStatus(callId, code, message))), hex(toBinary(ExecuteStreamResponseSchema, wantStatus)), `status ${code} on ${callId}`);
    }
  }
  // A request of more than 127 and 16383 bytes: multi-byte lengths.
  const big = toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { code: `return '${'x'.repeat(70_000)}'` }));
  const want = toBinary(ExecuteStreamRequestSchema, create(ExecuteStreamRequestSchema, { callId: 9, request: fromBinary(ExecuteRequestSchema, big) }));
  t.equal(hex(body(encodeStreamCall(9, big, 0))), hex(want), 'a request of 70 kB');
});

t.test("what protobuf-es writes is read back the same, and the inner bytes are the inner message's", async (t) => {
  for (const callId of IDS) {
    const m = decodeStreamRequest(
      toBinary(ExecuteStreamRequestSchema, create(ExecuteStreamRequestSchema, { callId, request: fromBinary(ExecuteRequestSchema, request), timeoutMs: 250 })),
    );
    t.same([m.callId, m.timeoutMs, m.cancel], [callId, 250, false]);
    t.same(fromBinary(ExecuteRequestSchema, m.request!), fromBinary(ExecuteRequestSchema, request), 'the request decodes to the same message');

    const r = decodeStreamResponse(
      toBinary(ExecuteStreamResponseSchema, create(ExecuteStreamResponseSchema, { callId, outcome: { case: 'status', value: { code: 8, message: 'full' } } })),
    );
    t.same(r, { callId, status: { code: 8, message: 'full' } });
    const ok = decodeStreamResponse(body(encodeStreamResponse(callId, response)));
    t.equal(hex(ok.response!), hex(response));
  }
  const cancel = decodeStreamRequest(toBinary(ExecuteStreamRequestSchema, create(ExecuteStreamRequestSchema, { callId: 5, cancel: true })));
  t.same([cancel.callId, cancel.cancel, cancel.request], [5, true, undefined]);
});

t.test('proto3 reading: any field order, unknown fields skipped, the last scalar wins, the last oneof member wins', async (t) => {
  // timeout (field 3) first, an unknown varint (field 9), fixed64 (10), fixed32 (11) and bytes (12), call_id twice.
  const unknown = [0x48, 0x96, 0x01, 0x51, 1, 2, 3, 4, 5, 6, 7, 8, 0x5d, 1, 2, 3, 4, 0x62, 2, 0xaa, 0xbb];
  const bytes = Uint8Array.from([0x18, 0x2c, 0x08, 0x01, ...unknown, 0x12, request.length, ...request, 0x08, 0x07]);
  const m = decodeStreamRequest(bytes);
  t.same([m.callId, m.timeoutMs, m.cancel, m.request?.length], [7, 44, false, request.length]);
  t.same(m.callId, fromBinary(ExecuteStreamRequestSchema, bytes).callId, 'protobuf-es reads the same call id');

  // A response then a status: the oneof holds the status (protobuf-es agrees).
  const both = Buffer.concat([body(encodeStreamResponse(3, response)), body(encodeStreamStatus(3, 14, 'gone')).subarray(2)]);
  t.same(decodeStreamResponse(both), { callId: 3, status: { code: 14, message: 'gone' } });
  t.equal(fromBinary(ExecuteStreamResponseSchema, both).outcome.case, 'status');
  // call_id above 32 bits: proto3 keeps the low 32 bits of a uint32, as protobuf-es does.
  const wide = Uint8Array.from([0x08, 0x81, 0x80, 0x80, 0x80, 0x10]);
  t.equal(decodeStreamRequest(wide).callId, fromBinary(ExecuteStreamRequestSchema, wide).callId);
});

t.test('bytes that are not such a message are refused with StreamWireError', async (t) => {
  const cases: [string, number[]][] = [
    ['a varint cut off', [0x08, 0x80]],
    ['a tag cut off', [0x88]],
    ['a length past the end', [0x12, 0x05, 1, 2]],
    ['a fixed64 past the end', [0x51, 1, 2]],
    ['a varint of more than 8 bytes', [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
    ['call_id as bytes', [0x0a, 0x01, 0x00]],
    ['request as a varint', [0x08, 0x01, 0x10, 0x01]],
    ['a group (wire type 3)', [0x08, 0x01, 0x33]],
    ['the request twice', [0x08, 0x01, 0x12, 0x00, 0x12, 0x00]],
    ['all ones', Array(12).fill(0xff)],
  ];
  for (const [name, bytes] of cases) {
    t.throws(() => decodeStreamRequest(Uint8Array.from(bytes)), StreamWireError, `request: ${name}`);
  }
  t.throws(() => decodeStreamResponse(Uint8Array.from([0x08, 0x01, 0x1a, 0x02, 0x12, 0x05])), StreamWireError, 'a status message past the end');
  t.throws(() => decodeStreamResponse(Uint8Array.from([0x08, 0x01, 0x1a, 0x03, 0x12, 0x01, 0xff])), StreamWireError, 'a status message that is not UTF-8');
  t.throws(() => decodeStreamResponse(Uint8Array.from([0x08, 0x01, 0x12, 0x00, 0x12, 0x00])), StreamWireError, 'the response twice');
  // Random bytes: either a message or StreamWireError, nothing else.
  let seed = 42;
  const next = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) & 0xff;
  for (let i = 0; i < 2000; i++) {
    const bytes = Uint8Array.from({ length: 1 + (next() % 24) }, next);
    for (const decode of [decodeStreamRequest, decodeStreamResponse]) {
      try {
        decode(bytes);
      } catch (err) {
        if (!(err instanceof StreamWireError)) t.fail(`${Buffer.from(bytes).toString('hex')}: ${String(err)}`);
      }
    }
  }
});

t.test('the frame reader: messages split anywhere, several per chunk, each in a buffer of its own', async (t) => {
  const frames = [encodeStreamCall(1, request, 10), encodeStreamCancel(2), encodeStreamCall(3, new Uint8Array(0), 0), encodeStreamCall(4, request, 0)];
  const all = Buffer.concat(frames);
  for (const size of [1, 2, 5, 7, 64, all.length]) {
    const got: Uint8Array[] = [];
    const reader = new GrpcMessageReader(
      1024,
      (m) => got.push(m),
      (kind, text) => t.fail(`${kind}: ${text}`),
    );
    for (let at = 0; at < all.length; at += size) reader.push(all.subarray(at, at + size));
    t.same(
      got.map(hex),
      frames.map((f) => hex(f.subarray(GRPC_FRAME_HEADER))),
      `chunks of ${size}`,
    );
    t.ok(
      got.every((m) => m.byteOffset === 0 && m.buffer.byteLength === m.byteLength),
      'each message has an ArrayBuffer of its own',
    );
    t.equal(reader.partial, 0, 'nothing left over');
  }
  const half = new GrpcMessageReader(
    1024,
    () => {},
    () => {},
  );
  half.push(all.subarray(0, 9));
  t.equal(half.partial, 9, 'a message begun and not ended shows as partial');
});

t.test('the frame reader refuses a compressed or flagged message and one over the limit, then takes nothing more', async (t) => {
  for (const [flags, kind] of [
    [1, 'compressed'],
    [0x80, 'compressed'],
  ] as const) {
    const errors: string[] = [];
    const got: Uint8Array[] = [];
    const reader = new GrpcMessageReader(
      1024,
      (m) => got.push(m),
      (k, text) => errors.push(`${k}: ${text}`),
    );
    const f = encodeStreamCancel(1);
    f[0] = flags;
    reader.push(Buffer.concat([f, encodeStreamCancel(2)]));
    t.equal(errors.length, 1);
    t.match(errors[0], new RegExp(`^${kind}: protocol error`));
    t.equal(got.length, 0, 'nothing after the error is read');
  }
  const errors: string[] = [];
  const reader = new GrpcMessageReader(
    100,
    () => t.fail('no message'),
    (k, text) => errors.push(`${k}: ${text}`),
  );
  reader.push(Uint8Array.from([0, 0xff, 0xff, 0xff, 0xff]));
  t.same(errors, ['too-large: a message is 4294967295 bytes, over the limit of 100 bytes'], 'refused on its header, before its body');
});
