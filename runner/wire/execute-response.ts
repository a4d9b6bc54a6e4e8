import { create, toBinary, toJson, type JsonObject } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import {
  ErrorKind,
  type ExecuteResponse,
  ExecuteResponseSchema,
  ExecutionErrorSchema,
  ExecutionStatsSchema,
  LogEntrySchema,
  LogLevel,
} from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import type { SandboxOutcome, UserErrorKind } from '../sandbox/index.js';
import { jsonToValue } from './json-to-value.js';
import { encodeValueField } from '../../src/protobuf/value-binary.js';

/** How an ExecuteRequest and its response are encoded on the wire: protobuf binary or Connect JSON. */
export type WireEncoding = 'proto' | 'json';

const ERROR_KINDS: Record<UserErrorKind, ErrorKind> = {
  thrown: ErrorKind.THROWN,
  syntax: ErrorKind.SYNTAX,
  timeout: ErrorKind.TIMEOUT,
  'memory-limit': ErrorKind.MEMORY_LIMIT,
  'invalid-result': ErrorKind.INVALID_RESULT,
};

const logLevel = (level: SandboxOutcome['logs'][number]['level']): LogLevel => (level === 'warn' ? LogLevel.WARN : LogLevel.INFO);

/** Maps a sandbox outcome to the wire message; `withResult: false` leaves `result` out. */
export function toExecuteResponse(outcome: SandboxOutcome, queueTimeMs: number, withResult = true): ExecuteResponse {
  return create(ExecuteResponseSchema, {
    requestId: outcome.requestId,
    result: !withResult || outcome.resultJson === undefined ? undefined : jsonToValue(JSON.parse(outcome.resultJson)),
    logs: outcome.logs.map((l) => ({ level: logLevel(l.level), message: l.message })),
    error: outcome.error && {
      kind: ERROR_KINDS[outcome.error.kind],
      name: outcome.error.name,
      message: outcome.error.message,
      stack: outcome.error.stack,
    },
    files: outcome.files ?? [],
    download: outcome.download,
    stats: {
      wallTimeMs: outcome.wallTimeMs,
      queueTimeMs,
      memoryUsedBytes: BigInt(outcome.memoryUsedBytes),
    },
  });
}

const utf8 = new TextEncoder();

/**
 * Encodes the outcome as an ExecuteResponse in `encoding`, gRPC-framed (the 5-byte message header of
 * PROTOCOL-HTTP2 "Length-Prefixed-Message", uncompressed) when asked. Runs in the worker, so a large
 * result never occupies the main thread. The bytes are in an ArrayBuffer of their own (transferable).
 *
 * JSON: protobuf-es's `toJson` writes a `google.protobuf.Struct` by assigning `json[key] = …`, so an own
 * `"__proto__"` key of the returned value becomes a prototype change and disappears from the text. The
 * JSON form of a `google.protobuf.Value` is the value's JSON itself, and the sandbox already hands the
 * result over as JSON text (`resultJson`), so that text is written as `result` unchanged; every other
 * field is protobuf-es's JSON. Test: test/runner/wire-values.test.ts.
 */
export function encodeExecuteResponse(outcome: SandboxOutcome, queueTimeMs: number, encoding: WireEncoding, grpcFramed: boolean): Uint8Array {
  if (encoding === 'json') {
    const json = toJson(ExecuteResponseSchema, toExecuteResponse(outcome, queueTimeMs, false)) as JsonObject;
    const parts: string[] = [];
    for (const [key, value] of Object.entries(json)) {
      parts.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
      if (key === 'requestId' && outcome.resultJson !== undefined) parts.push(`"result":${outcome.resultJson}`);
    }
    if (!('requestId' in json) && outcome.resultJson !== undefined) parts.unshift(`"result":${outcome.resultJson}`);
    const bytes = utf8.encode(`{${parts.join(',')}}`);
    return grpcFramed ? frame(bytes) : bytes;
  }
  // Binary: the result (ExecuteResponse field 2) is written by value-binary.ts, ~10× faster than
  // protobuf-es for large results, after the other fields; protobuf readers accept fields in any order.
  const rest =
    outcome.files === undefined && outcome.download === undefined
      ? writePlainFields(outcome, queueTimeMs)
      : toBinary(ExecuteResponseSchema, toExecuteResponse(outcome, queueTimeMs, false));
  const result = outcome.resultJson === undefined ? undefined : encodeValueField(2, JSON.parse(outcome.resultJson));
  const bytes = result === undefined ? rest : concat(rest, result);
  return grpcFramed ? frame(bytes) : bytes;
}

// Field numbers from the generated schemas, so that the proto stays the single source of truth.
const RESPONSE = fieldNumbers(ExecuteResponseSchema.field);
const LOG = fieldNumbers(LogEntrySchema.field);
const ERROR = fieldNumbers(ExecutionErrorSchema.field);
const STATS = fieldNumbers(ExecutionStatsSchema.field);

function fieldNumbers<K extends string>(fields: Record<K, { number: number }>): Record<K, number> {
  return Object.fromEntries(Object.entries<{ number: number }>(fields).map(([k, f]) => [k, f.number])) as Record<K, number>;
}

/**
 * The same bytes as `toBinary(ExecuteResponseSchema, toExecuteResponse(outcome, queueTimeMs, false))` for
 * an outcome without files or a download (nearly every call), written with protobuf-es's own
 * BinaryWriter instead of through `create` and the reflective `toBinary`: those took ~10 % of a worker's
 * time per `return 1` call. proto3 leaves default values ("", unset, +0 but not -0) out, as `toBinary` does.
 * Test: test/runner/execute-response-writer.test.ts compares the two byte for byte.
 */
function writePlainFields(outcome: SandboxOutcome, queueTimeMs: number): Uint8Array {
  const w = new BinaryWriter();
  if (outcome.requestId !== '') w.tag(RESPONSE.requestId, WireType.LengthDelimited).string(outcome.requestId);
  for (const log of outcome.logs) {
    w.tag(RESPONSE.logs, WireType.LengthDelimited).fork();
    w.tag(LOG.level, WireType.Varint).int32(logLevel(log.level));
    if (log.message !== '') w.tag(LOG.message, WireType.LengthDelimited).string(log.message);
    w.join();
  }
  const error = outcome.error;
  if (error) {
    w.tag(RESPONSE.error, WireType.LengthDelimited).fork();
    w.tag(ERROR.kind, WireType.Varint).int32(ERROR_KINDS[error.kind]);
    if (error.name !== '') w.tag(ERROR.name, WireType.LengthDelimited).string(error.name);
    if (error.message !== '') w.tag(ERROR.message, WireType.LengthDelimited).string(error.message);
    if (error.stack !== '') w.tag(ERROR.stack, WireType.LengthDelimited).string(error.stack);
    w.join();
  }
  w.tag(RESPONSE.stats, WireType.LengthDelimited).fork();
  if (!Object.is(outcome.wallTimeMs, 0)) w.tag(STATS.wallTimeMs, WireType.Bit64).double(outcome.wallTimeMs);
  if (!Object.is(queueTimeMs, 0)) w.tag(STATS.queueTimeMs, WireType.Bit64).double(queueTimeMs);
  if (outcome.memoryUsedBytes !== 0) w.tag(STATS.memoryUsedBytes, WireType.Varint).uint64(outcome.memoryUsedBytes);
  w.join();
  return w.finish();
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}

/** `bytes` behind the 5-byte gRPC message header: flag 0 (not compressed), big-endian length. */
export function frame(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + bytes.byteLength);
  new DataView(out.buffer).setUint32(1, bytes.byteLength);
  out.set(bytes, 5);
  return out;
}
