/**
 * Client deadlines: `grpc-timeout` (gRPC, gRPC-Web) and `connect-timeout-ms` (Connect).
 *
 * A deadline further away than a timer can wait is no deadline: `setTimeout` fires at once (after 1 ms,
 * with a TimeoutOverflowWarning) for any delay above 2^31-1 ms, about 24.8 days, so a well-formed
 * `99999999H` (about 11,400 years) used to end the call immediately with DEADLINE_EXCEEDED.
 */

/** The longest delay `setTimeout` keeps. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A parsed deadline header: the time left in ms (`undefined`: none), or why the value is refused. */
export type ParsedTimeout = { ok: true; ms: number | undefined } | { ok: false; message: string };

const GRPC_TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const GRPC_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };
const CONNECT_TIMEOUT = /^\d{1,10}$/;

/**
 * gRPC PROTOCOL-HTTP2 "Timeout": at most 8 digits and a unit (Hours, Minutes, Seconds, milliseconds,
 * microseconds, nanoseconds). A malformed value is refused (connect-node did the same, INVALID_ARGUMENT).
 */
export function parseGrpcTimeout(value: string | string[] | undefined): ParsedTimeout {
  if (value === undefined) return { ok: true, ms: undefined };
  const match = typeof value === 'string' ? GRPC_TIMEOUT.exec(value) : null;
  if (!match) return { ok: false, message: `protocol error: invalid grpc-timeout value ${JSON.stringify(String(value))}` };
  return reachable(Number(match[1]) * GRPC_UNIT_MS[match[2]!]!);
}

/** Connect protocol "Timeout-Ms": at most 10 digits of milliseconds. */
export function parseConnectTimeout(value: string | string[] | undefined): ParsedTimeout {
  if (value === undefined) return { ok: true, ms: undefined };
  if (typeof value !== 'string' || !CONNECT_TIMEOUT.test(value)) {
    return { ok: false, message: `protocol error: invalid connect-timeout-ms value ${JSON.stringify(String(value))}` };
  }
  return reachable(Number(value));
}

function reachable(ms: number): ParsedTimeout {
  return { ok: true, ms: ms > MAX_TIMER_MS ? undefined : ms };
}

/**
 * For requests served by connect-node, which times a deadline with one `setTimeout`: removes a deadline
 * header whose value is well-formed but beyond {@link MAX_TIMER_MS}, so the call runs without one
 * instead of ending at once. Malformed values are left for connect-node to refuse.
 */
export function dropUnreachableDeadlines(headers: Record<string, string | string[] | undefined>): void {
  for (const [name, parse] of [
    ['grpc-timeout', parseGrpcTimeout],
    ['connect-timeout-ms', parseConnectTimeout],
  ] as const) {
    const value = headers[name];
    if (value === undefined) continue;
    const parsed = parse(value);
    if (parsed.ok && parsed.ms === undefined) delete headers[name];
  }
}
