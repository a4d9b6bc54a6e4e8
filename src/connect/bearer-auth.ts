/**
 * The one bearer-token check of ldbox's edges: the runner (LDBOX_RUNNER_TOKEN) and the gateway's control
 * plane (LDBOX_ADMIN_TOKEN). Each edge checks the request head itself before reading a body (the runner's
 * Execute routes, the gateway's request handler) and mounts {@link bearerAuth} on connect-node, so its
 * services stay closed wherever they are served.
 *
 * Tests: test/connect/bearer-auth.test.ts; per edge, test/runner/limits-and-requests.test.ts and
 * test/gateway/control-plane.test.ts.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';

/** True when an `Authorization` header value carries the token. */
export type TokenCheck = (authorization: string | string[] | undefined) => boolean;

/**
 * Checks `Authorization: Bearer <token>`. Compared in constant time over SHA-256 digests, so neither the
 * content nor the length of the token leaks through timing (`timingSafeEqual` alone needs equal lengths).
 * A repeated header (an array) never matches.
 */
export function createTokenCheck(token: string): TokenCheck {
  const expected = digest(`Bearer ${token}`);
  return (authorization) => timingSafeEqual(digest(typeof authorization === 'string' ? authorization : ''), expected);
}

export interface BearerAuthOptions {
  /** What a caller without the right token is told (UNAUTHENTICATED): names the header and the setting. */
  message: string;
  /** Services (`typeName`) that need no token: health checks must work for load balancers without it. */
  open?: ReadonlySet<string>;
}

/** A Connect interceptor that refuses every call without the token (except to `open` services) with UNAUTHENTICATED. */
export function bearerAuth(token: string, options: BearerAuthOptions): Interceptor {
  const allows = createTokenCheck(token);
  const open = options.open ?? new Set<string>();
  return (next) => async (req) => {
    if (!open.has(req.service.typeName) && !allows(req.header.get('authorization') ?? '')) {
      throw new ConnectError(options.message, Code.Unauthenticated);
    }
    return next(req);
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
