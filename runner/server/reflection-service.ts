import { create, type DescExtension, type DescFile, type DescMessage, toBinary } from '@bufbuild/protobuf';
import { nestedTypes } from '@bufbuild/protobuf/reflect';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, type ConnectRouter } from '@connectrpc/connect';
import { file_grpc_health_v1_health } from '../../src/gen/grpc/health/v1/health_pb.js';
import * as v1 from '../../src/gen/grpc/reflection/v1/reflection_pb.js';
import * as v1alpha from '../../src/gen/grpc/reflection/v1alpha/reflection_pb.js';

/**
 * Serve grpc.reflection.v1 and grpc.reflection.v1alpha ServerReflection, so that grpcurl, grpc_cli,
 * Postman and similar tools can discover the runner's API without a copy of the .proto files. Both
 * versions are served because older tools still ask v1alpha first.
 *
 * `files` are the descriptors of the application's services (e.g. `file_ldbox_runner_v1_runner`); the
 * health and reflection descriptors are added here, since those services are registered too. Every
 * answer covers these files and their transitive imports (e.g. google/protobuf/struct.proto).
 */
export function registerReflectionService(router: ConnectRouter, files: DescFile[]): void {
  const index = createReflectionIndex([
    ...files,
    file_grpc_health_v1_health,
    v1.file_grpc_reflection_v1_reflection,
    v1alpha.file_grpc_reflection_v1alpha_reflection,
  ]);
  router.service(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield create(v1.ServerReflectionResponseSchema, {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answer(index, request.messageRequest),
        });
      }
    },
  });
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield create(v1alpha.ServerReflectionResponseSchema, {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answer(index, request.messageRequest),
        });
      }
    },
  });
}

/** What a client asks for, in either protocol version (the two differ only in type names). */
type Query = v1.ServerReflectionRequest['messageRequest'] | v1alpha.ServerReflectionRequest['messageRequest'];

/** The `message_response` oneof, without type names, so that both versions' `create()` accept it. */
type Answer =
  | { case: 'fileDescriptorResponse'; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: 'allExtensionNumbersResponse'; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: 'listServicesResponse'; value: { service: { name: string }[] } }
  | { case: 'errorResponse'; value: { errorCode: number; errorMessage: string } };

/** The lookups reflection needs, computed once at registration. */
interface ReflectionIndex {
  /** Full names of the services to list, in registration order. */
  readonly services: string[];
  /** Every known file, imports included, by file name. */
  readonly files: Map<string, DescFile>;
  /** The declaring file of every symbol: services, methods, messages, fields, oneofs, enums, values, extensions. */
  readonly symbols: Map<string, DescFile>;
  /** Full names of every message type, the types that extensions can extend. */
  readonly messages: Set<string>;
  /** The extensions of each message type, by the extendee's full name. */
  readonly extensions: Map<string, { number: number; file: DescFile }[]>;
}

/** Answer one request; every request gets exactly one answer, an error_response if need be. */
function answer(index: ReflectionIndex, query: Query): Answer {
  switch (query.case) {
    case 'listServices':
      return { case: 'listServicesResponse', value: { service: index.services.map((name) => ({ name })) } };
    case 'fileByFilename':
      return fileAnswer(index.files.get(query.value), `file ${JSON.stringify(query.value)}`);
    case 'fileContainingSymbol':
      return fileAnswer(index.symbols.get(query.value), `symbol ${JSON.stringify(query.value)}`);
    case 'fileContainingExtension': {
      const { containingType, extensionNumber } = query.value;
      const found = index.extensions.get(containingType)?.find((ext) => ext.number === extensionNumber);
      return fileAnswer(found?.file, `extension ${extensionNumber} of ${JSON.stringify(containingType)}`);
    }
    case 'allExtensionNumbersOfType':
      return extensionNumbersAnswer(index, query.value);
    case undefined:
      return errorAnswer(Code.InvalidArgument, 'no message_request set');
  }
}

/** The file plus its transitive imports, or NOT_FOUND naming what was asked for. */
function fileAnswer(file: DescFile | undefined, what: string): Answer {
  if (file === undefined) return errorAnswer(Code.NotFound, `${what} not found`);
  const fileDescriptorProto = withDependencies(file).map((f) => toBinary(FileDescriptorProtoSchema, f.proto));
  return { case: 'fileDescriptorResponse', value: { fileDescriptorProto } };
}

/** The known extension numbers of a message type (often none), or NOT_FOUND for an unknown type. */
function extensionNumbersAnswer(index: ReflectionIndex, typeName: string): Answer {
  if (!index.messages.has(typeName)) return errorAnswer(Code.NotFound, `message type ${JSON.stringify(typeName)} not found`);
  const extensionNumber = (index.extensions.get(typeName) ?? []).map((ext) => ext.number);
  return { case: 'allExtensionNumbersResponse', value: { baseTypeName: typeName, extensionNumber } };
}

/** An error_response; `code` is a gRPC status code (Connect's codes use the same numbers). */
function errorAnswer(code: Code, errorMessage: string): Answer {
  return { case: 'errorResponse', value: { errorCode: code, errorMessage } };
}

/** Build the lookups for `roots` and everything they import. */
function createReflectionIndex(roots: DescFile[]): ReflectionIndex {
  const files = filesByName(roots);
  const all = [...files.values()];
  return {
    services: serviceNames(roots),
    files,
    symbols: new Map(all.flatMap((file) => [...symbolNames(file)].map((name) => [name, file] as const))),
    messages: new Set(all.flatMap((file) => fileMessages(file).map((message) => message.typeName))),
    extensions: extensionsByExtendee(all),
  };
}

/** The full names of the services declared in `roots`, each once, in order. */
function serviceNames(roots: DescFile[]): string[] {
  return [...new Set(roots.flatMap((file) => file.services.map((service) => service.typeName)))];
}

/** `roots` and their transitive imports by file name, e.g. "google/protobuf/struct.proto". */
function filesByName(roots: DescFile[]): Map<string, DescFile> {
  return new Map(roots.flatMap(withDependencies).map((file) => [file.proto.name, file] as const));
}

/** The extensions declared in `files`, grouped by the full name of the message they extend. */
function extensionsByExtendee(files: DescFile[]): Map<string, { number: number; file: DescFile }[]> {
  const byExtendee = new Map<string, { number: number; file: DescFile }[]>();
  for (const file of files) {
    for (const ext of fileExtensions(file)) {
      const list = byExtendee.get(ext.extendee.typeName) ?? [];
      list.push({ number: ext.number, file });
      byExtendee.set(ext.extendee.typeName, list);
    }
  }
  return byExtendee;
}

/** `file` first, then everything it imports, directly or not, each once. */
function withDependencies(file: DescFile): DescFile[] {
  const seen = new Set<DescFile>();
  const visit = (f: DescFile): void => {
    if (seen.has(f)) return;
    seen.add(f);
    f.dependencies.forEach(visit);
  };
  visit(file);
  return [...seen];
}

/** Every fully qualified name `file` declares, as file_containing_symbol may ask for it. */
function* symbolNames(file: DescFile): Generator<string> {
  for (const type of nestedTypes(file)) {
    yield type.typeName;
    switch (type.kind) {
      case 'service':
        for (const method of type.methods) yield `${type.typeName}.${method.name}`;
        break;
      case 'message':
        for (const field of type.fields) yield `${type.typeName}.${field.name}`;
        for (const oneof of type.oneofs) yield `${type.typeName}.${oneof.name}`;
        break;
      case 'enum': {
        // Enum values are scoped like C++ enumerators: siblings of their enum, not children.
        const scope = type.typeName.slice(0, Math.max(0, type.typeName.lastIndexOf('.')));
        for (const value of type.values) yield scope ? `${scope}.${value.name}` : value.name;
        break;
      }
      case 'extension':
        break;
    }
  }
}

/** The extensions declared anywhere in `file`, at top level or nested in messages. */
function fileExtensions(file: DescFile): DescExtension[] {
  return [...nestedTypes(file)].filter((type): type is DescExtension => type.kind === 'extension');
}

/** The messages declared anywhere in `file`, at top level or nested in messages. */
function fileMessages(file: DescFile): DescMessage[] {
  return [...nestedTypes(file)].filter((type): type is DescMessage => type.kind === 'message');
}
