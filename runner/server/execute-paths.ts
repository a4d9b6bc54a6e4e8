import type { IncomingHttpHeaders } from 'node:http';
import { RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import type { WireEncoding } from '../wire/execute-response.js';

/** `/ldbox.runner.v1.RunnerService/Execute`. */
export const EXECUTE_PATH = `/${RunnerService.typeName}/${RunnerService.method.execute.name}`;
/** `/ldbox.runner.v1.RunnerService/ExecuteStream`. */
export const EXECUTE_STREAM_PATH = `/${RunnerService.typeName}/${RunnerService.method.executeStream.name}`;

/**
 * A binary, uncompressed gRPC call of Execute (PROTOCOL-HTTP2: `application/grpc` or
 * `application/grpc+proto`, no `grpc-encoding` other than identity): the runner's hot path.
 * gRPC-Web (`application/grpc-web…`) and gRPC+JSON are left to connect-node.
 */
export function isPlainGrpcExecute(headers: IncomingHttpHeaders): boolean {
  return headers[':path'] === EXECUTE_PATH && isPlainGrpcPost(headers);
}

/** A binary, uncompressed gRPC call of ExecuteStream (served only so: execute-stream.ts). */
export function isPlainGrpcExecuteStream(headers: IncomingHttpHeaders): boolean {
  return headers[':path'] === EXECUTE_STREAM_PATH && isPlainGrpcPost(headers);
}

function isPlainGrpcPost(headers: IncomingHttpHeaders): boolean {
  if (headers[':method'] !== 'POST') return false;
  const type = headers['content-type'];
  if (type !== 'application/grpc' && type !== 'application/grpc+proto') return false;
  const encoding = headers['grpc-encoding'];
  return encoding === undefined || encoding === 'identity';
}

const CONNECT_UNARY_TYPE = /^application\/(json|proto)(?:;\s*charset=utf-?8)?$/i;

/**
 * The encoding of a Connect unary call of Execute the runner reads itself (POST, `application/json` or
 * `application/proto`, no Content-Encoding other than identity, `connect-protocol-version` absent or 1),
 * `undefined` for any other request.
 */
export function connectUnaryEncoding(method: string | undefined, path: string | undefined, headers: IncomingHttpHeaders): WireEncoding | undefined {
  if (path !== EXECUTE_PATH || method !== 'POST') return undefined;
  const match = CONNECT_UNARY_TYPE.exec(headers['content-type'] ?? '');
  if (!match) return undefined;
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return undefined;
  const version = headers['connect-protocol-version'];
  if (version !== undefined && version !== '1') return undefined;
  return match[1]!.toLowerCase() === 'json' ? 'json' : 'proto';
}
