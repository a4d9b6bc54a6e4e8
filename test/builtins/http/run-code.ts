/**
 * Runs sandbox code through a real runner (grpc-js client) and gives back its outcome as plain data:
 * the result as JSON, or the error's kind, name and message.
 */
import { type JsonValue, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { ErrorKind } from '../../../src/gen/ldbox/runner/v1/runner_pb.js';
import type { ExecuteInit, TestRunner } from '../../helpers/runner-harness.js';

export { ErrorKind };

export interface Outcome {
  result: JsonValue | undefined;
  error: { kind: ErrorKind; name: string; message: string } | undefined;
  /** Wall time of the Execute call, in ms. */
  ms: number;
}

export interface RunOptions {
  auth?: Record<string, JsonValue>;
  /** The call's time limit (limits.timeoutMs). */
  timeoutMs?: number;
}

export async function runCode(runner: TestRunner, code: string, input: Record<string, JsonValue> = {}, options: RunOptions = {}): Promise<Outcome> {
  const started = performance.now();
  const init: ExecuteInit = { code, input, auth: options.auth ?? {} };
  if (options.timeoutMs !== undefined) init.limits = { timeoutMs: options.timeoutMs };
  const res = await runner.grpc.execute(init);
  return {
    result: res.result === undefined ? undefined : toJson(ValueSchema, res.result),
    error: res.error && { kind: res.error.kind, name: res.error.name, message: res.error.message },
    ms: performance.now() - started,
  };
}

/** The error of code that catches the ld.request failure and returns `[name, message]`. */
export const CATCH = (call: string) => `try { await ${call}; return 'no error'; } catch (e) { return [e.name, e.message, e instanceof Error]; }`;
