import { randomUUID } from 'node:crypto';
import { type DescMessage, fromBinary, fromJsonString, type JsonObject } from '@bufbuild/protobuf';
import type { PoolConfig } from '../config/index.js';
import { type ExecuteRequest, ExecuteRequestSchema, ResultKind as ProtoResultKind } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { collectSecrets, type ResultKind, type SandboxRequest } from '../sandbox/index.js';
import { structsKeepingKeys } from '../../src/protobuf/struct-entries.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const RESULT_KINDS: Record<number, ResultKind> = {
  [ProtoResultKind.UNSPECIFIED]: 'generic',
  [ProtoResultKind.GENERIC]: 'generic',
  [ProtoResultKind.FILES]: 'files',
  [ProtoResultKind.NATIVE_SEARCH]: 'native-search',
  [ProtoResultKind.NATIVE_DOWNLOAD]: 'native-download',
};

/** What an ExecuteRequest may ask for: the operator's limits (RunnerConfig), as plain data for workers. */
export interface RequestLimits {
  /** Largest `code`, in bytes of UTF-8. */
  maxCodeBytes: number;
  /** Largest `input` + `auth`, as JSON bytes. */
  maxInputBytes: number;
  pool: Pick<PoolConfig, 'defaultTimeoutMs' | 'maxTimeoutMs' | 'defaultMemoryBytes' | 'maxMemoryBytes' | 'minMemoryBytes'>;
}

/**
 * The request itself is wrong (INVALID_ARGUMENT at the edge). The message names the field and the limit
 * and is sent to the caller as it is.
 */
export class InvalidRequestError extends Error {
  override readonly name = 'InvalidRequestError';
}

export function isInvalidRequest(err: unknown): err is InvalidRequestError {
  return err instanceof InvalidRequestError;
}

function invalid(message: string): InvalidRequestError {
  return new InvalidRequestError(message);
}

/** A sandbox request and whether its time limit is the client's deadline rather than its own limit. */
export interface CheckedRequest {
  request: SandboxRequest;
  /** The client's deadline is shorter than the call's time limit: a timeout is the deadline passing. */
  deadlineLimited: boolean;
}

/**
 * Checks an ExecuteRequest against the operator's limits and turns it into a sandbox call.
 * Every refusal is an {@link InvalidRequestError} with a message that names the field and the limit.
 * `deadlineMs` is the time left until the client's deadline, if it sent one.
 */
export function toSandboxRequest(req: ExecuteRequest, limits: RequestLimits, deadlineMs: number | undefined): CheckedRequest {
  const pool = limits.pool;
  if (req.code.trim() === '') throw invalid('code is empty: send a JavaScript body that ends with `return`');
  const codeBytes = Buffer.byteLength(req.code, 'utf8');
  if (codeBytes > limits.maxCodeBytes) {
    throw invalid(`code is ${codeBytes} bytes, over the limit of ${limits.maxCodeBytes} bytes`);
  }
  if (req.requestId !== '' && !REQUEST_ID.test(req.requestId)) {
    throw invalid('requestId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  }
  if (req.tenant !== '' && !REQUEST_ID.test(req.tenant)) {
    throw invalid('tenant must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  }
  const resultKind = RESULT_KINDS[req.resultKind];
  if (resultKind === undefined) throw invalid(`resultKind ${req.resultKind} is not a known ResultKind`);

  let timeoutMs = req.limits?.timeoutMs || pool.defaultTimeoutMs;
  if (timeoutMs > pool.maxTimeoutMs) {
    throw invalid(`limits.timeoutMs must be at most ${pool.maxTimeoutMs}, got ${timeoutMs}`);
  }
  // A client deadline shorter than the sandbox timeout ends the call first; no use running past it.
  let deadlineLimited = false;
  if (deadlineMs !== undefined && deadlineMs < timeoutMs) {
    timeoutMs = Math.max(1, deadlineMs);
    deadlineLimited = true;
  }

  const askedMemory = req.limits?.memoryBytes ?? 0n;
  const memoryBytes = askedMemory === 0n ? pool.defaultMemoryBytes : Number(askedMemory);
  if (memoryBytes > pool.maxMemoryBytes) {
    throw invalid(`limits.memoryBytes must be at most ${pool.maxMemoryBytes}, got ${askedMemory}`);
  }
  if (memoryBytes < pool.minMemoryBytes) {
    throw invalid(`limits.memoryBytes must be at least ${pool.minMemoryBytes}, got ${askedMemory}`);
  }

  const input: JsonObject = req.input ?? {};
  const auth: JsonObject = req.auth ?? {};
  const dataJson = JSON.stringify({ input, auth });
  const dataBytes = Buffer.byteLength(dataJson, 'utf8');
  if (dataBytes > limits.maxInputBytes) {
    throw invalid(`input and auth are ${dataBytes} bytes of JSON, over the limit of ${limits.maxInputBytes} bytes`);
  }
  return {
    request: {
      requestId: req.requestId || randomUUID(),
      tenant: req.tenant,
      code: req.code,
      dataJson,
      secrets: collectSecrets(auth),
      resultKind,
      timeoutMs,
      memoryBytes,
    },
    deadlineLimited,
  };
}

/** Decodes a binary ExecuteRequest; a malformed one is an {@link InvalidRequestError}. */
export function decodeBinaryRequest(bytes: Uint8Array): ExecuteRequest {
  try {
    const req = fromBinary(ExecuteRequestSchema, bytes);
    const kept = structsKeepingKeys(bytes);
    if (kept?.input) req.input = kept.input;
    if (kept?.auth) req.auth = kept.auth;
    return req;
  } catch (err) {
    throw invalid(`cannot decode ${ExecuteRequestSchema.typeName}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes an ExecuteRequest from Connect JSON, as connect-node would (unknown fields ignored, duplicate
 * keys refused), except that:
 * - an enum value given by an unknown name is refused with a message naming the field. protobuf-es reads
 *   an unknown enum name, when unknown fields are ignored, as "not set": a `"resultKind": "NOPE"` would
 *   silently run as GENERIC;
 * - `input` and `auth` are taken from `JSON.parse` itself, which defines every key, when the text may
 *   hold a `__proto__` key (literally or through a `\u` escape): protobuf-es's Struct assigns keys and
 *   would lose it.
 */
export function decodeJsonRequest(bytes: Uint8Array): ExecuteRequest {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalid(`cannot decode ${ExecuteRequestSchema.typeName} from JSON: the body is not UTF-8`);
  }
  let req: ExecuteRequest;
  try {
    req = fromJsonString(ExecuteRequestSchema, text, { ignoreUnknownFields: true });
  } catch (err) {
    throw invalid(err instanceof Error ? err.message : String(err));
  }
  // Only a request that names an enum field can hold an unknown name, and only one with `__proto__` or
  // an escape can lose a key: the rest skip the second parse.
  const mayLoseKeys = text.includes('__proto__') || text.includes('\\u');
  if (!mayLoseKeys && !ENUM_KEYS.some((key) => text.includes(key))) return req;
  const json = JSON.parse(text) as Record<string, unknown>;
  const unknown = findUnknownEnumName(ExecuteRequestSchema, json, '');
  if (unknown) throw invalid(unknown);
  if (mayLoseKeys) {
    // fromJsonString accepted them, so each is null (unset) or an object of JSON values.
    if (isObject(json['input'])) req.input = json['input'];
    if (isObject(json['auth'])) req.auth = json['auth'];
  }
  return req;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `"jsonName"` and `"proto_name"` of every enum field in ExecuteRequest, nested messages included. */
const ENUM_KEYS = [...new Set(enumFieldKeys(ExecuteRequestSchema, new Set()))].map((k) => `"${k}"`);

function enumFieldKeys(desc: DescMessage, seen: Set<string>): string[] {
  if (seen.has(desc.typeName) || isWellKnown(desc)) return [];
  seen.add(desc.typeName);
  return desc.fields.flatMap((f) => {
    if (f.enum) return [f.jsonName, f.name];
    return f.message ? enumFieldKeys(f.message, seen) : [];
  });
}

/** google.protobuf.* messages have JSON forms of their own (a Struct is any object): not walked. */
function isWellKnown(desc: DescMessage): boolean {
  return desc.typeName.startsWith('google.protobuf.');
}

/** The message for the first enum field in `json` whose string value is not a name of its enum. */
function findUnknownEnumName(desc: DescMessage, json: unknown, path: string): string | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json) || isWellKnown(desc)) return undefined;
  const obj = json as Record<string, unknown>;
  for (const field of desc.fields) {
    const value = Object.hasOwn(obj, field.jsonName) ? obj[field.jsonName] : obj[field.name];
    if (value === undefined) continue;
    const name = `${path}${field.jsonName}`;
    const values =
      field.fieldKind === 'list' && Array.isArray(value)
        ? value
        : field.fieldKind === 'map' && typeof value === 'object' && value !== null
          ? Object.values(value)
          : [value];
    for (const v of values) {
      if (field.enum && typeof v === 'string' && !field.enum.values.some((e) => e.name === v)) {
        return `${name} ${JSON.stringify(v)} is not a known ${field.enum.name}`;
      }
      if (field.message) {
        const found = findUnknownEnumName(field.message, v, `${name}.`);
        if (found) return found;
      }
    }
  }
  return undefined;
}
