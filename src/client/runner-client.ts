import { create, createFileRegistry, type DescMessage, type JsonObject, type JsonValue, type Message } from '@bufbuild/protobuf';
import { type DescriptorProto, DescriptorProtoSchema, FileDescriptorProtoSchema, NullValue } from '@bufbuild/protobuf/wkt';
import { clone } from '@bufbuild/protobuf';
import { createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import {
  file_ldbox_runner_internal_v1_struct_entries,
  type StructEntries,
  StructEntriesSchema,
  type ValueEntries,
  ValueEntriesSchema,
} from '../gen/ldbox/runner/internal/v1/struct_entries_pb.js';
import {
  type Download,
  ErrorKind,
  type ExecuteResponse,
  ExecuteRequestSchema,
  ExecuteResponseSchema,
  type File,
  file_ldbox_runner_v1_runner,
  type GetPoolStatusResponse,
  LogLevel,
  ResultKind,
  RunnerService,
} from '../gen/ldbox/runner/v1/runner_pb.js';
import { valueEntriesToJson } from '../protobuf/struct-entries.js';

/** How a client reaches a service: its URL, and the bearer token it needs (LDBOX_RUNNER_TOKEN, LDBOX_ADMIN_TOKEN). */
export interface ClientOptions {
  /** `http://127.0.0.1:50051`, `https://runner.internal:50051`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>` on every call when set. */
  token?: string;
  /** Interceptors run on every call after the token is added (tracing, retries, …). */
  interceptors?: Interceptor[];
  /** Use this transport instead of one made from `baseUrl` (TLS client certificates, a proxy, tests). */
  transport?: Transport;
}

export interface RunnerClientOptions extends ClientOptions {
  /**
   * `grpc` (default): gRPC over HTTP/2, the runner's fast path. `connect`: the Connect protocol over
   * HTTP/1.1, for networks that only pass HTTP/1.1.
   */
  protocol?: 'grpc' | 'connect';
}

export type ResultKindName = 'generic' | 'files' | 'native-search' | 'native-download';

/** One call of integration code. `input` and `auth` are plain JSON objects; `auth` is redacted from logs and errors. */
export interface ExecuteOptions {
  code: string;
  input?: JsonObject;
  auth?: JsonObject;
  limits?: { timeoutMs?: number; memoryBytes?: number };
  resultKind?: ResultKindName;
  /** Echoed in the runner's logs and the response; generated when absent. */
  requestId?: string;
}

export type ExecuteErrorKind = 'thrown' | 'syntax' | 'timeout' | 'memory-limit' | 'invalid-result';

/** The outcome of a call, as plain data. When `error` is set there is no result, no files and no download. */
export interface ExecuteResult {
  requestId: string;
  /** The returned value as plain JSON (every key kept as data, `__proto__` included); `undefined` with an error. */
  result: JsonValue | undefined;
  logs: { level: 'info' | 'warn'; message: string }[];
  error: { kind: ExecuteErrorKind; name: string; message: string; stack: string } | undefined;
  files: { fileName: string; mimeType: string; content: Uint8Array; isText: boolean }[];
  download: { fileName: string; mimeType: string; content: Uint8Array } | undefined;
  stats: { wallTimeMs: number; queueTimeMs: number; memoryUsedBytes: number };
}

export interface CallOptions {
  signal?: AbortSignal;
  /** The deadline of the RPC (sent as grpc-timeout / connect-timeout-ms); defaults to none. */
  timeoutMs?: number;
}

export interface RunnerClient {
  /** Runs code on the runner. User-code failures resolve with `error` set; a failed RPC rejects with a ConnectError. */
  execute(options: ExecuteOptions, call?: CallOptions): Promise<ExecuteResult>;
  /** The pool's state, as the runner reports it. */
  getPoolStatus(call?: CallOptions): Promise<GetPoolStatusResponse>;
}

/**
 * A client of the runner's RunnerService: `execute` takes and returns plain JSON. The result crosses
 * as a `google.protobuf.Value`, which protobuf-es reads into objects by assignment (a `"__proto__"`
 * key would become a prototype change and vanish), so it is read here as entries and every key is
 * defined as data, as the runner reads `input` and `auth` (src/protobuf/struct-entries.ts).
 */
export function createRunnerClient(options: RunnerClientOptions): RunnerClient {
  const transport =
    options.transport ??
    (options.protocol === 'connect'
      ? createConnectTransport({ baseUrl: options.baseUrl, httpVersion: '1.1', useBinaryFormat: true, interceptors: interceptors(options) })
      : createGrpcTransport({ baseUrl: options.baseUrl, interceptors: interceptors(options) }));
  const client = createClient(RunnerService, transport);
  const execute = { ...RunnerService.method.execute, ...keepingKeys() };
  return {
    async execute(o, call = {}) {
      const resultKind = RESULT_KINDS[o.resultKind ?? 'generic'];
      if (resultKind === undefined) throw new TypeError(`resultKind must be one of ${Object.keys(RESULT_KINDS).join(', ')}, got "${o.resultKind}"`);
      const input = create(execute.input, {
        code: o.code,
        input: structEntries(o.input ?? {}, 'input'),
        auth: structEntries(o.auth ?? {}, 'auth'),
        limits: { timeoutMs: o.limits?.timeoutMs ?? 0, memoryBytes: BigInt(o.limits?.memoryBytes ?? 0) },
        resultKind,
        requestId: o.requestId ?? '',
      });
      const res = await transport.unary(execute, call.signal, call.timeoutMs, undefined, input, undefined);
      return plainResult(res.message as unknown as ResponseKeepingKeys);
    },
    getPoolStatus(call = {}) {
      return client.getPoolStatus({}, { signal: call.signal, timeoutMs: call.timeoutMs });
    },
  };
}

/** The token first, then the caller's interceptors. */
export function interceptors(options: ClientOptions): Interceptor[] {
  const bearer: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${options.token}`);
    return next(req);
  };
  return [...(options.token === undefined ? [] : [bearer]), ...(options.interceptors ?? [])];
}

const RESULT_KINDS: Readonly<Record<ResultKindName, ResultKind>> = {
  generic: ResultKind.GENERIC,
  files: ResultKind.FILES,
  'native-search': ResultKind.NATIVE_SEARCH,
  'native-download': ResultKind.NATIVE_DOWNLOAD,
};

const ERROR_KINDS: Readonly<Partial<Record<ErrorKind, ExecuteErrorKind>>> = {
  [ErrorKind.THROWN]: 'thrown',
  [ErrorKind.SYNTAX]: 'syntax',
  [ErrorKind.TIMEOUT]: 'timeout',
  [ErrorKind.MEMORY_LIMIT]: 'memory-limit',
  [ErrorKind.INVALID_RESULT]: 'invalid-result',
};

/** A JSON object as StructEntries (the wire format of google.protobuf.Struct), every key kept. */
function structEntries(o: JsonObject, name: string): StructEntries {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new TypeError(`${name} must be a JSON object`);
  return create(StructEntriesSchema, { fields: Object.keys(o).map((key) => ({ key, value: valueEntries(o[key] as JsonValue) })) });
}

function valueEntries(v: JsonValue): ValueEntries {
  if (v === null || v === undefined) return create(ValueEntriesSchema, { kind: { case: 'nullValue', value: NullValue.NULL_VALUE } });
  switch (typeof v) {
    case 'number':
      return create(ValueEntriesSchema, { kind: { case: 'numberValue', value: v } });
    case 'string':
      return create(ValueEntriesSchema, { kind: { case: 'stringValue', value: v } });
    case 'boolean':
      return create(ValueEntriesSchema, { kind: { case: 'boolValue', value: v } });
    default:
      if (Array.isArray(v)) return create(ValueEntriesSchema, { kind: { case: 'listValue', value: { values: v.map(valueEntries) } } });
      if (typeof v === 'object') return create(ValueEntriesSchema, { kind: { case: 'structValue', value: structEntries(v, 'a value') } });
      throw new TypeError(`not a JSON value: ${typeof v}`);
  }
}

/** ExecuteResponse with its `result` read as entries (ValueEntries has the wire format of google.protobuf.Value). */
type ResponseKeepingKeys = Omit<ExecuteResponse, '$typeName' | 'result'> & Message & { result?: ValueEntries };

let keeping: { input: DescMessage; output: DescMessage } | undefined;

/**
 * The schemas Execute is written and read with: copies of ExecuteRequest and ExecuteResponse whose
 * Struct and Value fields are typed with ldbox.runner.internal.v1's entry lists (the same wire format),
 * built once from the generated descriptors. protobuf-es fills Structs by assignment, which drops a
 * `"__proto__"` key on either side; entry lists keep every key.
 */
function keepingKeys(): { input: DescMessage; output: DescMessage } {
  if (keeping) return keeping;
  const patched = (schema: DescMessage, fields: Record<string, string>): DescriptorProto => {
    const message = clone(DescriptorProtoSchema, schema.proto);
    message.name = `${message.name}KeepingKeys`;
    for (const [name, typeName] of Object.entries(fields)) {
      const field = message.field.find((f) => f.name === name);
      if (!field) throw new Error(`${schema.typeName} has no field ${name}`);
      field.typeName = `.ldbox.runner.internal.v1.${typeName}`;
    }
    return message;
  };
  const deps = [file_ldbox_runner_v1_runner, file_ldbox_runner_internal_v1_struct_entries];
  const file = create(FileDescriptorProtoSchema, {
    name: 'ldbox/client/execute_keeping_keys.proto',
    package: 'ldbox.runner.v1',
    syntax: 'proto3',
    dependency: deps.map((d) => d.proto.name),
    messageType: [patched(ExecuteRequestSchema, { input: 'StructEntries', auth: 'StructEntries' }), patched(ExecuteResponseSchema, { result: 'ValueEntries' })],
  });
  const registry = createFileRegistry(file, (name) => deps.find((d) => d.proto.name === name));
  const input = registry.getMessage('ldbox.runner.v1.ExecuteRequestKeepingKeys');
  const output = registry.getMessage('ldbox.runner.v1.ExecuteResponseKeepingKeys');
  if (!input || !output) throw new Error('the Execute schemas that keep keys were not built');
  keeping = { input, output };
  return keeping;
}

function plainResult(res: ResponseKeepingKeys): ExecuteResult {
  const error = res.error;
  return {
    requestId: res.requestId,
    result: error ? undefined : valueEntriesToJson(res.result),
    logs: res.logs.map((l) => ({ level: l.level === LogLevel.WARN ? 'warn' : 'info', message: l.message })),
    error: error && { kind: ERROR_KINDS[error.kind] ?? 'thrown', name: error.name, message: error.message, stack: error.stack },
    files: res.files.map((f: File) => ({ fileName: f.fileName, mimeType: f.mimeType, content: f.content, isText: f.isText })),
    download: res.download && plainDownload(res.download),
    stats: {
      wallTimeMs: res.stats?.wallTimeMs ?? 0,
      queueTimeMs: res.stats?.queueTimeMs ?? 0,
      memoryUsedBytes: Number(res.stats?.memoryUsedBytes ?? 0n),
    },
  };
}

function plainDownload(d: Download): ExecuteResult['download'] {
  return { fileName: d.fileName, mimeType: d.mimeType, content: d.content };
}
