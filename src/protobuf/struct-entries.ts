import { fromBinary, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { ExecuteRequestDataSchema, type StructEntries, type ValueEntries } from '../gen/ldbox/runner/internal/v1/struct_entries_pb.js';

/** The UTF-8 bytes of the one key protobuf-es loses: a wire key is never escaped, so a search is exact. */
const PROTO_KEY = Buffer.from('__proto__');

/**
 * `input` and `auth` of a binary ExecuteRequest with every key kept as data, or `undefined` when no key
 * can have been lost (the bytes hold no `__proto__`, the common case: one memchr-like scan).
 *
 * protobuf-es fills a Struct's map by assignment, so an own `"__proto__"` key turns into a prototype
 * change and disappears; ldbox.runner.internal.v1.ExecuteRequestData reads the same bytes as lists of
 * entries, turned here into objects whose keys are defined, never assigned. Duplicate keys: the last
 * wins, as protobuf's map semantics ask. Test: test/runner/wire-values.test.ts.
 */
export function structsKeepingKeys(bytes: Uint8Array): { input?: JsonObject; auth?: JsonObject } | undefined {
  if (Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(PROTO_KEY) === -1) return undefined;
  const data = fromBinary(ExecuteRequestDataSchema, bytes);
  const out: { input?: JsonObject; auth?: JsonObject } = {};
  if (data.input) out.input = structEntriesToJson(data.input);
  if (data.auth) out.auth = structEntriesToJson(data.auth);
  return out;
}

/** A Struct read as entries, as an object whose keys are all own data properties (the last duplicate wins). */
export function structEntriesToJson(struct: StructEntries): JsonObject {
  const obj: JsonObject = {};
  for (const { key, value } of struct.fields) {
    Object.defineProperty(obj, key, { value: valueEntriesToJson(value), enumerable: true, writable: true, configurable: true });
  }
  return obj;
}

/** A Value read as entries, as JSON whose keys are all own data properties. */
export function valueEntriesToJson(value: ValueEntries | undefined): JsonValue {
  const kind = value?.kind;
  switch (kind?.case) {
    case 'numberValue':
    case 'stringValue':
    case 'boolValue':
      return kind.value;
    case 'structValue':
      return structEntriesToJson(kind.value);
    case 'listValue':
      return kind.value.values.map(valueEntriesToJson);
    default:
      // null_value, and a Value with no kind set (protobuf-es reads that as null too).
      return null;
  }
}
