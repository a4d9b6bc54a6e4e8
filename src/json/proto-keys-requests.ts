/**
 * The request side of src/json/proto-keys.ts. protobuf-es decodes a request's Struct (and Value) fields
 * the way it encodes them, by assignment (`fields[key] = …`), so an own `"__proto__"` key sent by the
 * client turns into a prototype change of a temporary object and is gone from the decoded message
 * (CreateWorkflow: a node `input` template holding `{"__proto__": …}` would be stored without it).
 *
 * {@link keepProtoKeysOfRequest} puts such fields back from the message bytes as sent, read by decoders
 * that define keys instead: `JSON.parse` for JSON, the entries views of src/protobuf/struct-entries.ts
 * for binary. Only fields that hold a `__proto__` key are replaced; the rest of the message is
 * protobuf-es's. The walk follows the message's descriptor, so a new Struct field anywhere in a request
 * is covered without code. Map fields are not walked: no request has one that reaches a Struct.
 *
 * Test: test/gateway/workflow-proto-keys.test.ts.
 */
import { create, type DescField, type DescMessage, fromBinary, type JsonValue } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { ListEntriesSchema, StructEntriesSchema, ValueEntriesSchema } from '../gen/ldbox/runner/internal/v1/struct_entries_pb.js';
import { structEntriesToJson, valueEntriesToJson } from '../protobuf/struct-entries.js';
import { hasProtoKey, type ProtoEncoding } from './proto-keys.js';

/** The JSON-valued well-known types, whose keys protobuf-es assigns. */
const JSON_TYPES = new Set(['google.protobuf.Struct', 'google.protobuf.Value', 'google.protobuf.ListValue']);

const carries = new WeakMap<DescMessage, boolean>();

/** True when a message of `desc` can hold a Struct, Value or ListValue at some depth (memoized). */
export function carriesStructs(desc: DescMessage): boolean {
  let known = carries.get(desc);
  if (known === undefined) {
    known = reaches(desc, new Set());
    carries.set(desc, known);
  }
  return known;
}

function reaches(desc: DescMessage, seen: Set<DescMessage>): boolean {
  if (JSON_TYPES.has(desc.typeName)) return true;
  if (seen.has(desc)) return false;
  seen.add(desc);
  return desc.fields.some((f) => f.fieldKind !== 'map' && f.message !== undefined && reaches(f.message, seen));
}

/** The UTF-8 bytes of the one key that gets lost: a binary key is never escaped, so a search is exact. */
const PROTO_KEY = Buffer.from('__proto__');

/**
 * Puts back into `message` (just decoded from `bytes` by protobuf-es, of type `desc`) every Struct, Value
 * or ListValue field that holds an own `__proto__` key, with all its keys as own data properties.
 * Bytes that cannot hold the key (JSON: no `__proto__` and no `\u` escape; binary: no `__proto__`) cost
 * one scan.
 */
export function keepProtoKeysOfRequest(desc: DescMessage, message: object, bytes: Uint8Array, encoding: ProtoEncoding): void {
  if (!carriesStructs(desc)) return;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (encoding === 'binary') {
    if (buf.indexOf(PROTO_KEY) !== -1) fromBytes(desc, message, bytes);
    return;
  }
  const text = buf.toString('utf8');
  if (text.includes('__proto__') || text.includes('\\u')) fromJson(desc, message, JSON.parse(text));
}

type Fields = Record<string, unknown>;

/** A field's value in a decoded message (oneof members live under the oneof's name). */
function getField(message: object, f: DescField): unknown {
  const m = message as Fields;
  if (!f.oneof) return m[f.localName];
  const group = m[f.oneof.localName] as { case?: string; value?: unknown } | undefined;
  return group?.case === f.localName ? group.value : undefined;
}

function setField(message: object, f: DescField, value: unknown): void {
  const m = message as Fields;
  if (f.oneof) m[f.oneof.localName] = { case: f.localName, value };
  else m[f.localName] = value;
}

const isObject = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The JSON walk: `json` is the same request, parsed by `JSON.parse` (which defines every key). */
function fromJson(desc: DescMessage, message: object, json: unknown): void {
  if (!isObject(json)) return;
  for (const f of desc.fields) {
    const sub = f.message;
    if (f.fieldKind === 'map' || sub === undefined || !carriesStructs(sub)) continue;
    const value = Object.hasOwn(json, f.jsonName) ? json[f.jsonName] : Object.hasOwn(json, f.name) ? json[f.name] : undefined;
    const decoded = getField(message, f);
    if (value === undefined || value === null || decoded === undefined) continue;
    if (f.fieldKind === 'list') {
      if (!Array.isArray(value) || !Array.isArray(decoded)) continue;
      value.forEach((item, i) => {
        if (!JSON_TYPES.has(sub.typeName)) fromJson(sub, decoded[i] as object, item);
        else if (hasProtoKey(item)) decoded[i] = item;
      });
    } else if (!JSON_TYPES.has(sub.typeName)) fromJson(sub, decoded as object, value);
    else if (hasProtoKey(value)) setField(message, f, value);
  }
}

/** A Struct, Value or ListValue read from its bytes with every key defined. */
function readJsonType(desc: DescMessage, bytes: Uint8Array): JsonValue {
  switch (desc.typeName) {
    case 'google.protobuf.Struct':
      return structEntriesToJson(fromBinary(StructEntriesSchema, bytes));
    case 'google.protobuf.ListValue':
      return valueEntriesToJson(create(ValueEntriesSchema, { kind: { case: 'listValue', value: fromBinary(ListEntriesSchema, bytes) } }));
    default:
      return valueEntriesToJson(fromBinary(ValueEntriesSchema, bytes));
  }
}

/**
 * The binary walk. A list's elements come one per occurrence; a singular message field that occurs more
 * than once is merged, which for protobuf is the same as reading its occurrences' bytes concatenated (so
 * that is what is read, after the loop).
 */
function fromBytes(desc: DescMessage, message: object, bytes: Uint8Array): void {
  const reader = new BinaryReader(bytes);
  const listIndex = new Map<DescField, number>();
  const singular = new Map<DescField, Uint8Array[]>();
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    const f = desc.fields.find((field) => field.number === no);
    const sub = f?.message;
    if (f === undefined || sub === undefined || f.fieldKind === 'map' || wireType !== WireType.LengthDelimited || !carriesStructs(sub)) {
      reader.skip(wireType, no);
      continue;
    }
    const data = reader.bytes();
    if (f.fieldKind !== 'list') {
      singular.set(f, [...(singular.get(f) ?? []), data]);
      continue;
    }
    const i = listIndex.get(f) ?? 0;
    listIndex.set(f, i + 1);
    const decoded = getField(message, f);
    if (!Array.isArray(decoded) || i >= decoded.length) continue;
    if (!JSON_TYPES.has(sub.typeName)) fromBytes(sub, decoded[i] as object, data);
    else {
      const value = readJsonType(sub, data);
      if (hasProtoKey(value)) decoded[i] = value;
    }
  }
  for (const [f, parts] of singular) {
    const data = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    const decoded = getField(message, f);
    if (decoded === undefined) continue;
    if (!JSON_TYPES.has(f.message!.typeName)) fromBytes(f.message!, decoded as object, data);
    else {
      const value = readJsonType(f.message!, data);
      if (hasProtoKey(value)) setField(message, f, value);
    }
  }
}
