import type { Redact } from '../sandbox/redactor.js';

/** Operator settings for the ld.* built-ins (from config, handed to every worker). */
export interface BuiltinConfig {
  /** Hosts and CIDRs that ld.request may reach despite the private-address guard (LDBOX_EGRESS_ALLOW). */
  egressAllow: string[];
  /** Largest response body ld.request reads, in bytes. */
  maxResponseBytes: number;
  /** Most ld.request / ld.cloudRequest calls one sandbox call may make. */
  maxRequestsPerCall: number;
}

export const DEFAULT_BUILTIN_CONFIG: BuiltinConfig = {
  egressAllow: [],
  maxResponseBytes: 32 * 1024 * 1024,
  maxRequestsPerCall: 100,
};

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
