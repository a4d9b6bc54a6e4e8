/**
 * Plain-data shapes that cross the worker boundary (structured clone): one sandbox call in, its outcome out.
 * The gRPC layer maps them to and from the proto messages; the CLI uses them directly.
 */

import type { ResultKind } from '../results/index.js';

export type { ResultKind };

/** Why user code did not produce a result (mirrors ldbox.runner.v1.ErrorKind). */
export type UserErrorKind = 'thrown' | 'syntax' | 'timeout' | 'memory-limit' | 'invalid-result';

/** One call of user code. */
export interface SandboxRequest {
  requestId: string;
  /** Who the call is for (ExecuteRequest.tenant); '' = the shared tenant. Keys the hard-stop penalties. */
  tenant?: string;
  code: string;
  /** `JSON.stringify({input, auth})`, already validated as objects by the caller. */
  dataJson: string;
  /** The string values of `data.auth`, to redact from logs and error messages. */
  secrets: string[];
  resultKind: ResultKind;
  timeoutMs: number;
  memoryBytes: number;
}

export interface SandboxLog {
  level: 'info' | 'warn';
  message: string;
}

export interface SandboxError {
  kind: UserErrorKind;
  name: string;
  message: string;
  stack: string;
}

export interface SandboxFile {
  fileName: string;
  mimeType: string;
  content: Uint8Array;
  isText: boolean;
}

export interface SandboxDownload {
  fileName: string;
  mimeType: string;
  content: Uint8Array;
}

/** The outcome of one call. `error` set means no result. */
export interface SandboxOutcome {
  requestId: string;
  /** The returned value as JSON text (binary values as base64 strings), `undefined` when `error` is set. */
  resultJson?: string;
  logs: SandboxLog[];
  error?: SandboxError;
  files?: SandboxFile[];
  download?: SandboxDownload;
  wallTimeMs: number;
  memoryUsedBytes: number;
  /**
   * A built-in failed on the host side (the guest saw only "internal error in a sandbox built-in"):
   * the host error's message, for the operator's log. Never sent to the caller.
   */
  internalFault?: string;
}
