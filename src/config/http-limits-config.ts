/**
 * Transport limits every role's ports share (runner h2 + h1, gateway, executor's ops port): how many
 * connections and streams a peer may hold, and how long a slow or silent peer may hold them. Each is one
 * setting read by every role; `--help` and the README list them.
 *
 * Tests: test/runner/transport-limits.test.ts, test/gateway/transport-limits.test.ts.
 */
import { type Env, intSetting, type IntSpec } from './env-parsers.js';

/** The transport limits of one role's ports, validated and filled with defaults. */
export interface HttpLimits {
  /** Open TCP connections per port; beyond it new ones are closed at once. */
  maxConnections: number;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: streams one connection may have open; more are REFUSED_STREAM. */
  maxStreamsPerConnection: number;
  /**
   * Absolute deadline for the start of a request: the HTTP/1.1 request head, the HTTP/2 preface on the
   * shared runner port (not reset per byte).
   */
  headersTimeoutMs: number;
  /**
   * A request body not complete this long after its head: HTTP/1.1 answers 408 and closes, HTTP/2 resets the
   * stream. Not the runner's ExecuteStream, a request body that never ends (it ends when idle: idleTimeoutMs).
   */
  bodyTimeoutMs: number;
  /**
   * An HTTP/1.1 keep-alive connection or an HTTP/2 session without a request in flight is closed after this long;
   * the runner's ExecuteStream ends (OK) after this long without a call in flight.
   */
  idleTimeoutMs: number;
}

export const HTTP_LIMIT_SETTINGS = {
  maxConnections: {
    kind: 'int',
    name: 'LDBOX_MAX_CONNECTIONS',
    fallback: 1024,
    min: 1,
    max: 1_000_000,
    meaning: 'open connections per port; beyond it new connections are closed',
  },
  maxStreamsPerConnection: {
    kind: 'int',
    name: 'LDBOX_MAX_STREAMS_PER_CONNECTION',
    fallback: 128,
    min: 1,
    max: 10_000,
    meaning: 'HTTP/2 MAX_CONCURRENT_STREAMS: calls one connection may have open; more are refused (REFUSED_STREAM)',
  },
  headersTimeoutMs: {
    kind: 'int',
    name: 'LDBOX_HEADERS_TIMEOUT_MS',
    fallback: 20_000,
    min: 10,
    max: 600_000,
    meaning: 'a connection that has not sent a whole request head (or HTTP/2 preface) this long after connecting is closed, ms',
  },
  bodyTimeoutMs: {
    kind: 'int',
    name: 'LDBOX_BODY_TIMEOUT_MS',
    fallback: 30_000,
    min: 10,
    max: 600_000,
    meaning:
      "a request body not complete this long after its head is refused (408) and its connection (HTTP/2: its stream) closed, ms; not on the runner's ExecuteStream, whose body never ends",
  },
  idleTimeoutMs: {
    kind: 'int',
    name: 'LDBOX_IDLE_TIMEOUT_MS',
    fallback: 60_000,
    min: 10,
    max: 3_600_000,
    meaning:
      "an HTTP/1.1 keep-alive connection or HTTP/2 session with no call in flight is closed after this long, ms; the runner's ExecuteStream with no call in flight ends (OK) after it too",
  },
} as const satisfies Record<keyof HttpLimits, IntSpec>;

/** The settings, for each role's settings list. */
export const HTTP_LIMIT_SETTING_LIST: readonly IntSpec[] = Object.values(HTTP_LIMIT_SETTINGS);

/** Reads the transport limits; a ConfigError with an exact message on a bad value. */
export function loadHttpLimits(env: Env): HttpLimits {
  const S = HTTP_LIMIT_SETTINGS;
  return {
    maxConnections: intSetting(env, S.maxConnections),
    maxStreamsPerConnection: intSetting(env, S.maxStreamsPerConnection),
    headersTimeoutMs: intSetting(env, S.headersTimeoutMs),
    bodyTimeoutMs: intSetting(env, S.bodyTimeoutMs),
    idleTimeoutMs: intSetting(env, S.idleTimeoutMs),
  };
}
