/**
 * An own `"__proto__"` key of JSON data through protobuf-es's serializers, which lose it: they fill a
 * Struct's map and write its JSON by assignment (`fields[key] = …`, `json[key] = …`), so the key turns
 * into a prototype change and disappears. (`constructor` and `prototype` are assigned as own keys and
 * need nothing.) The control plane's execution reads (gateway/control-plane.ts) keep it, per encoding:
 *
 * - JSON: the key is renamed to {@link PROTO_KEY_STAND_IN} (random per process, so no data can hold it)
 *   before the message is built, and {@link keepProtoKeysTextEncoder}, the serializer's text encoder,
 *   writes `"__proto__"` back in its place in the finished JSON text.
 * - Binary: the field is left unset and its bytes, written key by key by the runner's Value writer
 *   (runner/wire/value-binary.ts), are attached as an unknown field, which `toBinary` writes as it is.
 *
 * {@link setStructKeepingKeys} does either for one Struct field of a message being built: the control plane's
 * execution reads (src/store/execution-repository.ts) and workflow reads (src/workflows/workflow-model.ts)
 * use it.
 *
 * Requests lose the key the same way when protobuf-es decodes them; src/json/proto-keys-requests.ts puts
 * it back from the bytes as sent.
 *
 * Tests: test/executor/request-data.test.ts (executions), test/gateway/workflow-proto-keys.test.ts
 * (workflow definitions, requests and answers).
 */
import { randomBytes } from 'node:crypto';
import type { DescField, JsonObject, JsonValue, Message } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import { encodeValueField } from '../protobuf/value-binary.js';

/** What an own `__proto__` key is called inside messages bound for JSON. */
export const PROTO_KEY_STAND_IN = `__proto__${randomBytes(16).toString('hex')}`;
const STAND_IN_TEXT = JSON.stringify(PROTO_KEY_STAND_IN);

const define = (o: object, key: string, value: unknown): void => {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
};

/** True when `v` holds an own `__proto__` key at any depth (the caller bounds the depth). */
export function hasProtoKey(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(v)) return v.some(hasProtoKey);
  for (const key of Object.keys(v)) {
    if (key === '__proto__' || hasProtoKey((v as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** A copy of `v` with every own `__proto__` key renamed to {@link PROTO_KEY_STAND_IN}. */
export function withStandIns<T extends JsonValue>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((item) => withStandIns(item)) as T;
  const out: JsonObject = {};
  for (const key of Object.keys(v)) define(out, key === '__proto__' ? PROTO_KEY_STAND_IN : key, withStandIns((v as JsonObject)[key]!));
  return out as T;
}

/** JSON text with the stand-in keys named `__proto__` again. */
export function restoreProtoKeys(text: string): string {
  return text.includes(PROTO_KEY_STAND_IN) ? text.replaceAll(STAND_IN_TEXT, '"__proto__"') : text;
}

const utf8 = new TextEncoder();

/** A `textEncoder` for connect's JSON serialization options: {@link restoreProtoKeys}, then UTF-8. */
export const keepProtoKeysTextEncoder = { encode: (text: string): Uint8Array => utf8.encode(restoreProtoKeys(text)) };

/** Skips one varint at `at`; the index after it. */
function skipVarint(bytes: Uint8Array, at: number): number {
  while (bytes[at]! & 0x80) at++;
  return at + 1;
}

/** An unknown-field entry for field `no` of type `google.protobuf.Value`, holding `value` with every key. */
export function valueUnknownField(no: number, value: JsonValue): { no: number; wireType: WireType; data: Uint8Array } {
  const field = encodeValueField(no, value);
  // tag, then the length-delimited data (length and Value bytes), which is what an unknown field holds.
  return { no, wireType: WireType.LengthDelimited, data: field.subarray(skipVarint(field, 0)) };
}

/** An unknown-field entry for field `no` of type `google.protobuf.Struct`, holding `obj` with every key. */
export function structUnknownField(no: number, obj: JsonObject): { no: number; wireType: WireType; data: Uint8Array } {
  // encodeValueField(no, obj) is: tag, length, then the Value: 0x2a (struct_value), length, Struct bytes.
  const field = encodeValueField(no, obj);
  const at = skipVarint(field, skipVarint(field, 0)) + 1;
  return { no, wireType: WireType.LengthDelimited, data: field.subarray(at) };
}

/**
 * How a message will be encoded for its client. An own `__proto__` key in a Struct or Value stays data only
 * when the message is built for its encoding; `json` also needs the serializer's text encoder
 * {@link keepProtoKeysTextEncoder}.
 */
export type ProtoEncoding = 'json' | 'binary';

/**
 * Sets the `google.protobuf.Struct` field `field` of `message` (being built) to `obj`, so that every key of
 * `obj` reaches a client that gets the message as `encoding`: as it is when no `__proto__` key is inside,
 * else with stand-ins (JSON) or as an unknown field holding the Struct's bytes (binary).
 */
export function setStructKeepingKeys(message: Message, field: DescField, obj: JsonObject, encoding: ProtoEncoding): void {
  const fields = message as unknown as Record<string, unknown>;
  if (!hasProtoKey(obj)) fields[field.localName] = obj;
  else if (encoding === 'json') fields[field.localName] = withStandIns(obj);
  else message.$unknown = [...(message.$unknown ?? []), structUnknownField(field.number, obj)];
}
