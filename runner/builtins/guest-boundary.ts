import type { BuiltinConfig } from '../config/index.js';

/**
 * The guest boundary: the contract between the sandbox (runner/sandbox, the host side of the bridge the
 * guest calls) and the ld.* built-ins (this folder). Both sides import it; neither imports the other's
 * internals. The sandbox never names a concrete built-in: the table is handed to it (`HostBuiltins`,
 * runner/sandbox/builtin-registry.ts), as quickjs-emscripten's core is handed a variant.
 * Tests: test/architecture/dependency-rule.test.ts (the direction), test/runner/sandbox-builtins.test.ts.
 */

export type { BuiltinConfig };

export const DEFAULT_BUILTIN_CONFIG: BuiltinConfig = {
  egressAllow: [],
  maxResponseBytes: 32 * 1024 * 1024,
  maxRequestsPerCall: 100,
};

/** The error classes a built-in may raise in the guest; the guest rethrows them as its own classes. */
export type GuestErrorName = 'TypeError' | 'RangeError' | 'SyntaxError' | 'Error';

/**
 * A failure meant for user code. Its message is shown to the guest as is (after redaction), so it must
 * never hold host paths or secrets. Any other host error reaches the guest as a generic message.
 */
export class GuestFacingError extends Error {
  override name = 'GuestFacingError';

  constructor(
    readonly guestName: GuestErrorName,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A FormData built in the sandbox: its entries as appended, `[name, value]` or
 * `[name, base64Content, fileName]` (values are strings or bytes). Checked by the built-in that uses it.
 */
export class GuestFormData {
  constructor(readonly entries: unknown[]) {}
}

/** Replaces every form of every secret in a text with `[REDACTED]` (made by runner/sandbox/redactor.ts). */
export interface Redact {
  (text: string): string;
  /**
   * Redacts a text that is the start of a longer one (the guest cuts a log line at the log budget):
   * such a text may end inside a secret, a piece no form matches, so an end that is the start of a
   * form is dropped as well. Absent on redactors without secrets, whose output is their input.
   */
  readonly cutShort?: (text: string) => string;
}

/** What a built-in knows about the call it serves. */
export interface BuiltinContext {
  /** Aborts when the call ends (result, timeout, cancellation): pending host work must stop. */
  readonly signal: AbortSignal;
  /** The call's deadline on the `performance.now()` clock. */
  readonly deadline: number;
  readonly redact: Redact;
  readonly config: BuiltinConfig;
  /** Per-call counters (e.g. requests made so far). */
  readonly counters: { requests: number };
  /** Appends a line to the call's logs (bounded, redacted). */
  log(message: string): void;
  /**
   * Registers a cleanup for when the call ends (cheaper than a listener on `signal` per operation,
   * which grows quadratically under thousands of pending waits). Returns a function that unregisters it.
   */
  onEnd(listener: () => void): () => void;
}

/**
 * A host built-in. Arguments arrive as plain data copied out of the guest (binary values as Uint8Array);
 * the return value goes back the same way (JSON-able data, Uint8Array/ArrayBuffer for bytes).
 * Throw a GuestFacingError for a failure the user should see; anything else shows as a generic error.
 */
export type SyncBuiltin = (args: unknown[], ctx: BuiltinContext) => unknown;
export type AsyncBuiltin = (args: unknown[], ctx: BuiltinContext) => Promise<unknown>;

export interface BuiltinTable {
  sync: Readonly<Record<string, SyncBuiltin>>;
  async: Readonly<Record<string, AsyncBuiltin>>;
}

/**
 * How a built-in appears in the guest: `ld.<name>` (or a global for atob/btoa), bound to a host
 * built-in. `http` is async and adds the spec's `json` field to a text response.
 */
export interface GuestBinding {
  guest: string;
  host: string;
  mode: 'sync' | 'async' | 'http';
  global?: boolean;
}

/** One area's built-ins (utilities, HTTP, formats, ...): its host functions and how the guest sees them. */
export interface BuiltinModule {
  sync?: Readonly<Record<string, SyncBuiltin>>;
  async?: Readonly<Record<string, AsyncBuiltin>>;
  bindings: readonly GuestBinding[];
}

/** The built-ins a sandbox serves: the host functions and how the guest sees them. */
export interface HostBuiltins {
  readonly table: BuiltinTable;
  readonly bindings: readonly GuestBinding[];
}
