import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import type { JsonObject } from '@bufbuild/protobuf';
import type { RunnerConfig } from '../../src/config/runner-config.js';
import { type ExecuteRequest, ResultKind as ProtoResultKind } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { collectSecrets, type ResultKind, type SandboxRequest } from '../sandbox/index.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const RESULT_KINDS: Record<number, ResultKind> = {
  [ProtoResultKind.UNSPECIFIED]: 'generic',
  [ProtoResultKind.GENERIC]: 'generic',
  [ProtoResultKind.FILES]: 'files',
  [ProtoResultKind.NATIVE_SEARCH]: 'native-search',
  [ProtoResultKind.NATIVE_DOWNLOAD]: 'native-download',
};

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/**
 * Checks an ExecuteRequest against the operator's limits and turns it into a sandbox call.
 * Every refusal is INVALID_ARGUMENT with a message that names the field and the limit.
 */
export function toSandboxRequest(req: ExecuteRequest, config: RunnerConfig, deadlineMs: number | undefined): SandboxRequest {
  const pool = config.pool;
  if (req.code.trim() === '') throw invalid('code is empty: send a JavaScript body that ends with `return`');
  const codeBytes = Buffer.byteLength(req.code, 'utf8');
  if (codeBytes > config.maxCodeBytes) {
    throw invalid(`code is ${codeBytes} bytes, over the limit of ${config.maxCodeBytes} bytes`);
  }
  if (req.requestId !== '' && !REQUEST_ID.test(req.requestId)) {
    throw invalid('requestId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  }
  const resultKind = RESULT_KINDS[req.resultKind];
  if (resultKind === undefined) throw invalid(`resultKind ${req.resultKind} is not a known ResultKind`);

  let timeoutMs = req.limits?.timeoutMs || pool.defaultTimeoutMs;
  if (timeoutMs > pool.maxTimeoutMs) {
    throw invalid(`limits.timeoutMs must be at most ${pool.maxTimeoutMs}, got ${timeoutMs}`);
  }
  // A client deadline shorter than the sandbox timeout ends the call first; no use running past it.
  if (deadlineMs !== undefined) timeoutMs = Math.max(1, Math.min(timeoutMs, deadlineMs));

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
  if (dataBytes > config.maxInputBytes) {
    throw invalid(`input and auth are ${dataBytes} bytes of JSON, over the limit of ${config.maxInputBytes} bytes`);
  }
  return {
    requestId: req.requestId || randomUUID(),
    code: req.code,
    dataJson,
    secrets: collectSecrets(auth),
    resultKind,
    timeoutMs,
    memoryBytes,
  };
}
