/** Sandbox calls made in-process (no pool, no server), for the tests that look inside a realm. */
import { BUILTINS, DEFAULT_BUILTIN_CONFIG, GUEST_BINDINGS } from '../../runner/builtins/index.js';
import { registerBuiltins, type SandboxLimits, type SandboxRequest } from '../../runner/sandbox/index.js';

// In-process calls have no worker to compose the sandbox: the tests that make them hand it the built-ins.
registerBuiltins({ table: BUILTINS, bindings: GUEST_BINDINGS });

export const MiB = 1024 * 1024;

/** Operator limits for in-process calls; `maxResultBytes` as the test needs. */
export function inProcessLimits(maxResultBytes = 8 * MiB): SandboxLimits {
  return {
    maxResultBytes,
    maxLogEntries: 100,
    maxLogChars: 100_000,
    // The main thread's V8 stack is ~1 MB: QuickJS must stay well inside it.
    maxStackBytes: 256 * 1024,
    builtins: DEFAULT_BUILTIN_CONFIG,
  };
}

/** A request for `code` with input `{ n: 1 }`, no auth, 5 s and 32 MiB unless `extra` says otherwise. */
export function sandboxRequest(code: string, extra: Partial<SandboxRequest> = {}): SandboxRequest {
  return {
    requestId: 'r',
    code,
    dataJson: JSON.stringify({ input: { n: 1 }, auth: {} }),
    secrets: [],
    resultKind: 'generic',
    timeoutMs: 5000,
    memoryBytes: 32 * MiB,
    ...extra,
  };
}
