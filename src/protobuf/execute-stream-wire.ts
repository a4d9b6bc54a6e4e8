/**
 * The messages of `RunnerService.ExecuteStream` (runner.proto: ExecuteStreamRequest, ExecuteStreamResponse)
 * as gRPC Length-Prefixed-Messages, read and written by hand around bytes already encoded: the call's
 * ExecuteRequest travels from the executor to a runner worker, and its ExecuteResponse back, as the bytes
 * they are, never decoded on the way (the runner's main thread only reads the envelope; the worker decodes
 * the request, as for Execute). protobuf-es would decode the inner message only to encode it again.
 *
 * The bytes are what protobuf-es writes for the same message, and what protobuf-es writes reads back the
 * same (test/protobuf/execute-stream-wire.test.ts), so the proto stays the one definition. Reading follows
 * proto3: fields in any order, unknown fields skipped, the last of a repeated scalar wins; an embedded
 * message given twice (which protobuf would merge) is refused, as nobody writes that.
 */
import { ExecuteRequestSchema } from '../gen/ldbox/runner/v1/runner_pb.js';

/** gRPC message framing: 1 flag byte (0: not compressed) + 4 bytes big-endian length. */
export const GRPC_FRAME_HEADER = 5;

/**
 * The ExecuteStream response header that states how many calls the stream takes at once (runner.proto): a
 * call that waits for host work parks in the runner, so a stream carries thousands, not one HTTP/2
 * connection's worth of streams.
 */
export const MAX_CALLS_HEADER = 'ldbox-max-calls-in-flight';

const CALL_ID = 0x08; // field 1, varint
const REQUEST_OR_RESPONSE = 0x12; // field 2, length-delimited
const TIMEOUT_MS = 0x18; // field 3, varint (in a request)
const CANCEL = 0x20; // field 4, varint
const STATUS = 0x1a; // field 3, length-delimited (in a response)
const STATUS_CODE = 0x08; // CallStatus field 1, varint
const STATUS_MESSAGE = 0x12; // CallStatus field 2, length-delimited

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

/** One ExecuteStreamRequest as read: `request` is a view into the message's bytes. */
export interface StreamRequestMessage {
  callId: number;
  request: Uint8Array | undefined;
  timeoutMs: number;
  cancel: boolean;
}

/** One ExecuteStreamResponse as read: `response` is a view into the message's bytes. */
export interface StreamResponseMessage {
  callId: number;
  response?: Uint8Array;
  status?: { code: number; message: string };
}

/** A message that does not follow runner.proto. */
export class StreamWireError extends Error {
  override readonly name = 'StreamWireError';
}

// --------------------------------------------------------------------------------------------- writing

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

/** A framed message of `bodySize` bytes: the buffer and where its body starts. */
function framed(bodySize: number): { out: Buffer; at: number } {
  const out = Buffer.allocUnsafe(GRPC_FRAME_HEADER + bodySize);
  out[0] = 0;
  out.writeUInt32BE(bodySize, 1);
  return { out, at: GRPC_FRAME_HEADER };
}

/** An ExecuteStreamRequest starting call `callId` with the encoded ExecuteRequest `request`, framed. */
export function encodeStreamCall(callId: number, request: Uint8Array, timeoutMs: number): Buffer {
  const size = 1 + varintSize(callId) + 1 + varintSize(request.length) + request.length + (timeoutMs > 0 ? 1 + varintSize(timeoutMs) : 0);
  const { out, at: start } = framed(size);
  let at = start;
  out[at++] = CALL_ID;
  at = writeVarint(out, at, callId);
  out[at++] = REQUEST_OR_RESPONSE;
  at = writeVarint(out, at, request.length);
  out.set(request, at);
  at += request.length;
  if (timeoutMs > 0) {
    out[at++] = TIMEOUT_MS;
    writeVarint(out, at, timeoutMs);
  }
  return out;
}

/** An ExecuteStreamRequest cancelling call `callId`, framed. */
export function encodeStreamCancel(callId: number): Buffer {
  const { out, at: start } = framed(1 + varintSize(callId) + 2);
  let at = start;
  out[at++] = CALL_ID;
  at = writeVarint(out, at, callId);
  out[at++] = CANCEL;
  out[at] = 1;
  return out;
}

/** An ExecuteStreamResponse answering call `callId` with the encoded ExecuteResponse `response`, framed. */
export function encodeStreamResponse(callId: number, response: Uint8Array): Buffer {
  const { out, at: start } = framed(1 + varintSize(callId) + 1 + varintSize(response.length) + response.length);
  let at = start;
  out[at++] = CALL_ID;
  at = writeVarint(out, at, callId);
  out[at++] = REQUEST_OR_RESPONSE;
  at = writeVarint(out, at, response.length);
  out.set(response, at);
  return out;
}

/** An ExecuteStreamResponse failing call `callId` with the gRPC status `code` (not 0), framed. */
export function encodeStreamStatus(callId: number, code: number, message: string): Buffer {
  const text = utf8.encode(message);
  const statusSize = 1 + varintSize(code) + (text.length > 0 ? 1 + varintSize(text.length) + text.length : 0);
  const { out, at: start } = framed(1 + varintSize(callId) + 1 + varintSize(statusSize) + statusSize);
  let at = start;
  out[at++] = CALL_ID;
  at = writeVarint(out, at, callId);
  out[at++] = STATUS;
  at = writeVarint(out, at, statusSize);
  out[at++] = STATUS_CODE;
  at = writeVarint(out, at, code);
  if (text.length > 0) {
    out[at++] = STATUS_MESSAGE;
    at = writeVarint(out, at, text.length);
    out.set(text, at);
  }
  return out;
}

// --------------------------------------------------------------------------------------------- reading

/** Reads fields off one message body; every read checks the bounds. */
class FieldReader {
  at = 0;
  constructor(readonly bytes: Uint8Array) {}

  /** The next field's number and wire type (its tag), or undefined at the end of the message. */
  nextField(): { field: number; wireType: number } | undefined {
    if (this.at >= this.bytes.length) return undefined;
    const tag = this.varint();
    return { field: Math.floor(tag / 8), wireType: tag & 7 };
  }

  /** A varint of at most 53 bits (larger ones are refused: no field here holds one). */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (this.at >= this.bytes.length) throw new StreamWireError('a varint runs past the end of the message');
      const b = this.bytes[this.at++]!;
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return value;
      scale *= 128;
    }
    throw new StreamWireError('a varint is longer than this message allows');
  }

  /** A length-delimited field's bytes, as a view. */
  bytesField(): Uint8Array {
    const length = this.varint();
    if (length > this.bytes.length - this.at) throw new StreamWireError('a field runs past the end of the message');
    const view = this.bytes.subarray(this.at, this.at + length);
    this.at += length;
    return view;
  }

  /** Skips a field of `wireType` (unknown to this reader). */
  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 2) this.bytesField();
    else if (wireType === 1 || wireType === 5) {
      const n = wireType === 1 ? 8 : 4;
      if (n > this.bytes.length - this.at) throw new StreamWireError('a field runs past the end of the message');
      this.at += n;
    } else throw new StreamWireError(`wire type ${wireType} is not used by this message`);
  }
}

/** ExecuteRequest.tenant's field number, from the generated descriptor (runner.proto). */
const TENANT_FIELD = ExecuteRequestSchema.field.tenant.number;
const tenantDecoder = new TextDecoder();

/**
 * The `tenant` of an encoded ExecuteRequest, read without decoding the rest (its fields are skipped by
 * length): the runner's main thread queues calls fairly by tenant before a worker decodes them. '' when it
 * is absent, too long, or the bytes cannot be read (the worker then refuses the request itself).
 */
export function peekTenant(request: Uint8Array): string {
  try {
    const r = new FieldReader(request);
    let tenant = '';
    for (let next = r.nextField(); next !== undefined; next = r.nextField()) {
      if (next.field === TENANT_FIELD && next.wireType === 2) {
        const bytes = r.bytesField();
        // A later occurrence wins, as protobuf decoders do.
        tenant = bytes.length <= 128 ? tenantDecoder.decode(bytes) : '';
      } else r.skip(next.wireType);
    }
    return tenant;
  } catch (err) {
    if (err instanceof StreamWireError) return '';
    throw err;
  }
}

/** The low 32 bits of a varint field (proto3's uint32 / int32 / bool reading of a larger value). */
const low32 = (n: number): number => n % 0x1_0000_0000;

function expectWireType(wireType: number, want: number, field: string): void {
  if (wireType !== want) throw new StreamWireError(`${field} has wire type ${wireType}, expected ${want}`);
}

/** Reads one ExecuteStreamRequest body (without its frame header). Throws StreamWireError. */
export function decodeStreamRequest(body: Uint8Array): StreamRequestMessage {
  const r = new FieldReader(body);
  const m: StreamRequestMessage = { callId: 0, request: undefined, timeoutMs: 0, cancel: false };
  for (let next = r.nextField(); next !== undefined; next = r.nextField()) {
    const { field, wireType } = next;
    if (field === 1) {
      expectWireType(wireType, 0, 'call_id');
      m.callId = low32(r.varint());
    } else if (field === 2) {
      expectWireType(wireType, 2, 'request');
      if (m.request !== undefined) throw new StreamWireError('request is given more than once');
      m.request = r.bytesField();
    } else if (field === 3) {
      expectWireType(wireType, 0, 'timeout_ms');
      m.timeoutMs = low32(r.varint());
    } else if (field === 4) {
      expectWireType(wireType, 0, 'cancel');
      m.cancel = r.varint() !== 0;
    } else r.skip(wireType);
  }
  return m;
}

/** Reads one ExecuteStreamResponse body (without its frame header). Throws StreamWireError. */
export function decodeStreamResponse(body: Uint8Array): StreamResponseMessage {
  const r = new FieldReader(body);
  const m: StreamResponseMessage = { callId: 0 };
  for (let next = r.nextField(); next !== undefined; next = r.nextField()) {
    const { field, wireType } = next;
    if (field === 1) {
      expectWireType(wireType, 0, 'call_id');
      m.callId = low32(r.varint());
    } else if (field === 2) {
      expectWireType(wireType, 2, 'response');
      if (m.response !== undefined) throw new StreamWireError('response is given more than once');
      m.response = r.bytesField();
      delete m.status; // a oneof: the last member given wins
    } else if (field === 3) {
      expectWireType(wireType, 2, 'status');
      if (m.status !== undefined) throw new StreamWireError('status is given more than once');
      m.status = decodeStatus(r.bytesField());
      delete m.response;
    } else r.skip(wireType);
  }
  return m;
}

function decodeStatus(body: Uint8Array): { code: number; message: string } {
  const r = new FieldReader(body);
  let code = 0;
  let message = '';
  for (let next = r.nextField(); next !== undefined; next = r.nextField()) {
    const { field, wireType } = next;
    if (field === 1) {
      expectWireType(wireType, 0, 'code');
      code = low32(r.varint()) | 0;
    } else if (field === 2) {
      expectWireType(wireType, 2, 'message');
      try {
        message = utf8Decoder.decode(r.bytesField());
      } catch {
        throw new StreamWireError('the status message is not UTF-8');
      }
    } else r.skip(wireType);
  }
  return { code, message };
}

/**
 * Splits a byte stream into gRPC messages: `push` each chunk; `onMessage` gets each whole message body
 * (a copy with an ArrayBuffer of its own, so it can be transferred), `onError` the first framing error
 * (a compressed or flagged message, one over `maxBytes`), after which the reader takes nothing more.
 */
export class GrpcMessageReader {
  readonly #header = new Uint8Array(GRPC_FRAME_HEADER);
  #headerBytes = 0;
  #message: Uint8Array | undefined;
  #messageBytes = 0;
  #failed = false;

  constructor(
    private readonly maxBytes: number,
    private readonly onMessage: (body: Uint8Array) => void,
    private readonly onError: (kind: 'compressed' | 'too-large', text: string) => void,
  ) {}

  /** Bytes of a message begun but not ended (the stream ended inside one if this is not 0 at its end). */
  get partial(): number {
    return this.#message === undefined ? this.#headerBytes : GRPC_FRAME_HEADER + this.#messageBytes;
  }

  push(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length && !this.#failed) {
      if (this.#message === undefined) {
        const n = Math.min(GRPC_FRAME_HEADER - this.#headerBytes, chunk.length - at);
        this.#header.set(chunk.subarray(at, at + n), this.#headerBytes);
        this.#headerBytes += n;
        at += n;
        if (this.#headerBytes < GRPC_FRAME_HEADER) return;
        const flags = this.#header[0]!;
        const length = new DataView(this.#header.buffer).getUint32(1);
        if (flags !== 0) {
          this.#failed = true;
          return this.onError(
            'compressed',
            (flags & 1) === 1
              ? 'protocol error: a message is compressed, but no grpc-encoding was sent'
              : `protocol error: unknown message flags 0x${flags.toString(16)}`,
          );
        }
        if (length > this.maxBytes) {
          this.#failed = true;
          return this.onError('too-large', `a message is ${length} bytes, over the limit of ${this.maxBytes} bytes`);
        }
        this.#message = new Uint8Array(length);
        this.#messageBytes = 0;
      }
      const n = Math.min(this.#message.length - this.#messageBytes, chunk.length - at);
      this.#message.set(chunk.subarray(at, at + n), this.#messageBytes);
      this.#messageBytes += n;
      at += n;
      if (this.#messageBytes === this.#message.length) {
        const message = this.#message;
        this.#message = undefined;
        this.#headerBytes = 0;
        this.onMessage(message);
      }
    }
  }
}
