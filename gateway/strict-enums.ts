/**
 * Strict enums on the control plane. proto3 enums are open: a binary or JSON request may carry any number
 * for an enum field, and connect-node's JSON parser by default turns an unknown enum *name* into the zero
 * value (an unknown `authMethod` became UNSPECIFIED, i.e. "legacy", answered 200). Names are refused by
 * parsing JSON strictly (gateway-server.ts, `ignoreUnknownFields: false`); numbers by {@link strictEnums},
 * which walks every request message by its descriptor, so a new enum field is covered without code.
 *
 * Test: test/gateway/strict-enums.test.ts (every enum field of every control-plane request).
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
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

/** protobuf-es's message for an unknown enum name in JSON: it names the enum, not the field. */
const UNKNOWN_ENUM_NAME = /^cannot decode enum (\S+) from JSON: (.*)$/;

/**
 * Makes connect-node's refusal of an unknown enum *name* (parsed before any interceptor runs) name the
 * field: the error JSON of the one response is rewritten to list the request's fields of that enum
 * (`webhook.authMethod "AUTH_METHOD_X" is not a known AuthMethod (one of …)`). Only a 400 whose message
 * is protobuf-es's enum message is touched.
 */
export function nameEnumFieldInErrors(res: ServerResponse, input: DescMessage): void {
  const writeHead = res.writeHead;
  const end = res.end;
  let held: { status: number; headers: OutgoingHttpHeaders } | undefined;
  const chunks: Buffer[] = [];
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    const headers = (rest.find((r) => typeof r === 'object' && r !== null) ?? {}) as OutgoingHttpHeaders;
    if (status !== 400) {
      res.writeHead = writeHead;
      return writeHead.call(this, status, ...(rest as [OutgoingHttpHeaders]));
    }
    held = { status, headers };
    res.write = ((chunk: Uint8Array | string, ...args: unknown[]) => {
      chunks.push(Buffer.from(chunk));
      const cb = args.find((a) => typeof a === 'function') as (() => void) | undefined;
      cb?.();
      return true;
    }) as ServerResponse['write'];
    return this;
  } as ServerResponse['writeHead'];
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    if (held === undefined) return end.apply(this, args as Parameters<ServerResponse['end']>);
    const first = args[0];
    if (first !== undefined && typeof first !== 'function') chunks.push(Buffer.from(first as Uint8Array));
    let body = Buffer.concat(chunks);
    try {
      const error = JSON.parse(body.toString('utf8')) as { code?: string; message?: string };
      const m = UNKNOWN_ENUM_NAME.exec(error.message ?? '');
      if (error.code === 'invalid_argument' && m) {
        const paths = enumFieldPaths(input, m[1]!, '', 0);
        const desc = enumNamed(input, m[1]!, 0);
        if (paths.length > 0 && desc) {
          error.message = `${paths.join(' or ')} ${m[2]} is not a known ${desc.name} (one of ${desc.values.map((v) => v.name).join(', ')})`;
          body = Buffer.from(JSON.stringify(error), 'utf8');
        }
      }
    } catch {
      // not JSON: sent as it was
    }
    const headers = { ...held.headers };
    for (const k of Object.keys(headers)) if (k.toLowerCase() === 'content-length') delete headers[k];
    writeHead.call(this, held.status, { ...headers, 'content-length': String(body.length) });
    const cb = args.find((a) => typeof a === 'function') as (() => void) | undefined;
    return (end as (...a: unknown[]) => ServerResponse).apply(this, cb ? [body, cb] : [body]);
  } as ServerResponse['end'];
}

/** JSON paths of the fields of enum `typeName` reachable from `desc`. */
function enumFieldPaths(desc: DescMessage, typeName: string, prefix: string, depth: number): string[] {
  if (depth > 8) return [];
  const out: string[] = [];
  for (const f of desc.fields) {
    if (f.enum?.typeName === typeName) out.push(`${prefix}${f.jsonName}`);
    else if (f.message && !f.message.typeName.startsWith('google.protobuf.'))
      out.push(...enumFieldPaths(f.message, typeName, `${prefix}${f.jsonName}.`, depth + 1));
  }
  return out;
}

function enumNamed(desc: DescMessage, typeName: string, depth: number): DescEnum | undefined {
  if (depth > 8) return undefined;
  for (const f of desc.fields) {
    if (f.enum?.typeName === typeName) return f.enum;
    if (f.message && !f.message.typeName.startsWith('google.protobuf.')) {
      const found = enumNamed(f.message, typeName, depth + 1);
      if (found) return found;
    }
  }
  return undefined;
}
