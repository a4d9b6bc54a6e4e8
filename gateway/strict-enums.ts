/**
 * Strict enums on the control plane. proto3 enums are open: a binary or JSON request may carry any number
 * for an enum field, and connect-node's JSON parser by default turns an unknown enum *name* into the zero
 * value (an unknown `authMethod` became UNSPECIFIED, i.e. "legacy", answered 200). Names are refused by
 * parsing JSON strictly (gateway-server.ts, `ignoreUnknownFields: false`); numbers by {@link strictEnums},
 * which walks every request message by its descriptor, so a new enum field is covered without code.
 *
 * Test: test/gateway/strict-enums.test.ts (every enum field of every control-plane request).
 */
import type { DescEnum, DescField, DescMessage } from '@bufbuild/protobuf';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';

/** Refuses a request whose enum fields (at any depth, in lists and map values) hold a number the enum does not define. */
export function strictEnums(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      const problem = unknownEnumValue(req.method.input, req.message as unknown as Record<string, unknown>, '');
      if (problem) throw new ConnectError(problem, Code.InvalidArgument);
    }
    return next(req);
  };
}

/** The first unknown enum value of `message`, as a message naming the field (JSON path), or undefined. */
export function unknownEnumValue(desc: DescMessage, message: Record<string, unknown>, prefix: string): string | undefined {
  for (const field of desc.fields) {
    const value = fieldValue(field, message);
    if (value === undefined) continue;
    const path = `${prefix}${field.jsonName}`;
    const problem = check(field, value, path);
    if (problem) return problem;
  }
  return undefined;
}

function fieldValue(field: DescField, message: Record<string, unknown>): unknown {
  if (field.oneof) {
    const group = message[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
    return group?.case === field.localName ? group.value : undefined;
  }
  return message[field.localName];
}

function check(field: DescField, value: unknown, path: string): string | undefined {
  switch (field.fieldKind) {
    case 'enum':
      return enumProblem(field.enum, value as number, path);
    case 'message':
      return unknownEnumValue(field.message, value as Record<string, unknown>, `${path}.`);
    case 'list':
      for (const [i, item] of (value as unknown[]).entries()) {
        const problem =
          field.listKind === 'enum'
            ? enumProblem(field.enum, item as number, `${path}[${i}]`)
            : field.listKind === 'message'
              ? unknownEnumValue(field.message, item as Record<string, unknown>, `${path}[${i}].`)
              : undefined;
        if (problem) return problem;
      }
      return undefined;
    case 'map':
      for (const [k, item] of Object.entries(value as Record<string, unknown>)) {
        const problem =
          field.mapKind === 'enum'
            ? enumProblem(field.enum, item as number, `${path}[${k}]`)
            : field.mapKind === 'message'
              ? unknownEnumValue(field.message, item as Record<string, unknown>, `${path}[${k}].`)
              : undefined;
        if (problem) return problem;
      }
      return undefined;
    default:
      return undefined;
  }
}

function enumProblem(desc: DescEnum, value: number, path: string): string | undefined {
  if (desc.values.some((v) => v.number === value)) return undefined;
  return `${path} ${value} is not a known ${desc.name} (one of ${desc.values.map((v) => v.name).join(', ')})`;
}
