import { create } from '@bufbuild/protobuf';
import { type Value, ValueSchema, NullValue, type Struct, StructSchema } from '@bufbuild/protobuf/wkt';

/**
 * Builds a google.protobuf.Value from parsed JSON. protobuf-es's own JSON reader assigns map keys with
 * `fields[key] = ...`, which turns a `"__proto__"` key into a prototype change and silently drops it;
 * here every key is defined as an own property of a null-prototype object, so it is kept as data.
 */
export function jsonToValue(v: unknown): Value {
  if (v === null || v === undefined) return create(ValueSchema, { kind: { case: 'nullValue', value: NullValue.NULL_VALUE } });
  switch (typeof v) {
    case 'number':
      return create(ValueSchema, { kind: { case: 'numberValue', value: v } });
    case 'string':
      return create(ValueSchema, { kind: { case: 'stringValue', value: v } });
    case 'boolean':
      return create(ValueSchema, { kind: { case: 'boolValue', value: v } });
    case 'object':
      if (Array.isArray(v)) {
        return create(ValueSchema, { kind: { case: 'listValue', value: { values: v.map(jsonToValue) } } });
      }
      return create(ValueSchema, { kind: { case: 'structValue', value: jsonToStruct(v as Record<string, unknown>) } });
    default:
      throw new TypeError(`not a JSON value: ${typeof v}`);
  }
}

function jsonToStruct(o: Record<string, unknown>): Struct {
  const fields: Record<string, Value> = Object.create(null) as Record<string, Value>;
  for (const key of Object.keys(o)) {
    Object.defineProperty(fields, key, { value: jsonToValue(o[key]), enumerable: true, writable: true, configurable: true });
  }
  const struct = create(StructSchema);
  struct.fields = fields;
  return struct;
}
