/**
 * The executor's own bytes for the two Struct/Value parts of `RunnerService.Execute` that protobuf-es
 * cannot carry faithfully: it fills a Struct's map by assignment, so an own `"__proto__"` key of the
 * request's `input` or of the response's `result` becomes a prototype change and disappears.
 *
 * - Request: `input` and `auth` are written with the direct Value writer (src/protobuf/value-binary.ts,
 *   keys from `Object.keys`) and attached as fields 2 and 3 through protobuf-es's unknown fields, which
 *   `toBinary` writes as they are. The runner reads them keeping every key (src/protobuf/struct-entries.ts).
 * - Response: the client decodes the answer as `google.protobuf.Empty`, which keeps every field as raw
 *   bytes; here it is decoded as ExecuteResponse, and `result` (when its bytes hold `__proto__`) once more
 *   as entries whose keys are defined, never assigned. A response that cannot be decoded (e.g. a result
 *   nested past protobuf's recursion limit) is the request's data, not a passing failure: see
 *   {@link UndeliverableResultError}.
 *
 * Test: test/executor/request-data.test.ts.
 */
import { fromBinary, type JsonObject, type JsonValue, toBinary, toJson } from '@bufbuild/protobuf';
import { type Empty, EmptySchema, ValueSchema } from '@bufbuild/protobuf/wkt';
import { type ExecuteRequest, ExecuteRequestSchema, type ExecuteResponse, ExecuteResponseSchema } from '../gen/ldbox/runner/v1/runner_pb.js';
import { structUnknownField } from '../json/proto-keys.js';
import { ValueEntriesSchema } from '../gen/ldbox/runner/internal/v1/struct_entries_pb.js';
import { valueEntriesToJson } from '../protobuf/struct-entries.js';

/**
 * The deepest `input` the executor sends (the input object is level 1): the runner reads at most ~32
 * levels of Struct (protobuf's 100 nested messages, three per level) and returns at most 32
 * (runner/results MAX_RESULT_DEPTH). A deeper input fails its node at once.
 */
export const MAX_INPUT_DEPTH = 32;

/** The runner's answer could not be read (malformed or nested too deep): retrying gives the same bytes. */
export class UndeliverableResultError extends Error {
  override readonly name = 'UndeliverableResultError';
}

/** The nesting depth of a JSON value (a scalar is 0), without recursion; stops once past `limit`. */
export function valueDepth(value: unknown, limit = Infinity): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) {
      max = depth;
      if (max > limit) return max;
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return max;
}

/**
 * `req` with `input` and `auth` moved into unknown fields 2 and 3, each holding its Struct's bytes written
 * key by key (src/json/proto-keys.ts). `input` always goes this way (the direct writer is also the fast
 * one); `auth` too, since a node's `auth` may hold a `__proto__` key as well.
 */
export function withStructBytes(req: ExecuteRequest, structs: { input: JsonObject; auth?: JsonObject | undefined }): ExecuteRequest {
  const fields = [structUnknownField(ExecuteRequestSchema.field.input!.number, structs.input)];
  if (structs.auth !== undefined) fields.push(structUnknownField(ExecuteRequestSchema.field.auth!.number, structs.auth));
  req.input = undefined;
  req.auth = undefined;
  req.$unknown = [...(req.$unknown ?? []), ...fields];
  return req;
}

const PROTO_KEY = Buffer.from('__proto__');

/** The ExecuteResponse in `answer` (decoded as Empty) and its result as JSON, keeping every key. */
export function readExecuteResponse(answer: Empty): { response: ExecuteResponse; result: JsonValue | undefined } {
  return readExecuteResponseBytes(toBinary(EmptySchema, answer), answer);
}

/** {@link readExecuteResponse} from the serialized response (`raw`: the same bytes decoded as Empty, when at hand). */
export function readExecuteResponseBytes(bytes: Uint8Array, raw?: Empty): { response: ExecuteResponse; result: JsonValue | undefined } {
  let response: ExecuteResponse;
  try {
    response = fromBinary(ExecuteResponseSchema, bytes);
  } catch (err) {
    throw new UndeliverableResultError(`the runner's answer cannot be read: ${(err as Error).message}`, { cause: err });
  }
  if (!response.result) return { response, result: undefined };
  if (Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(PROTO_KEY) === -1) {
    return { response, result: toJson(ValueSchema, response.result) as JsonValue };
  }
  // The last field 2 is the result (repeated message fields merge, but the runner writes one).
  const field = (raw ?? fromBinary(EmptySchema, bytes)).$unknown?.filter((f) => f.no === 2).at(-1);
  if (!field) return { response, result: toJson(ValueSchema, response.result) as JsonValue };
  let at = 0;
  while (field.data[at]! & 0x80) at++;
  return { response, result: valueEntriesToJson(fromBinary(ValueEntriesSchema, field.data.subarray(at + 1))) };
}
