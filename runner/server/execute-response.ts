import { create } from '@bufbuild/protobuf';
import {
  ErrorKind,
  type ExecuteResponse,
  ExecuteResponseSchema,
  LogLevel,
} from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import type { SandboxOutcome, UserErrorKind } from '../sandbox/index.js';
import { jsonToValue } from './json-to-value.js';

const ERROR_KINDS: Record<UserErrorKind, ErrorKind> = {
  thrown: ErrorKind.THROWN,
  syntax: ErrorKind.SYNTAX,
  timeout: ErrorKind.TIMEOUT,
  'memory-limit': ErrorKind.MEMORY_LIMIT,
  'invalid-result': ErrorKind.INVALID_RESULT,
};

/** Maps a sandbox outcome to the wire message. */
export function toExecuteResponse(outcome: SandboxOutcome, queueTimeMs: number): ExecuteResponse {
  return create(ExecuteResponseSchema, {
    requestId: outcome.requestId,
    result: outcome.resultJson === undefined ? undefined : jsonToValue(JSON.parse(outcome.resultJson)),
    logs: outcome.logs.map((l) => ({ level: l.level === 'warn' ? LogLevel.WARN : LogLevel.INFO, message: l.message })),
    error: outcome.error && {
      kind: ERROR_KINDS[outcome.error.kind],
      name: outcome.error.name,
      message: outcome.error.message,
      stack: outcome.error.stack,
    },
    files: outcome.files ?? [],
    download: outcome.download,
    stats: {
      wallTimeMs: outcome.wallTimeMs,
      queueTimeMs,
      memoryUsedBytes: BigInt(outcome.memoryUsedBytes),
    },
  });
}
