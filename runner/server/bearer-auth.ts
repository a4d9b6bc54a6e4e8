import { createHash, timingSafeEqual } from 'node:crypto';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';

/** What a caller without the right token is told (UNAUTHENTICATED). */
export const UNAUTHENTICATED_MESSAGE = 'missing or wrong runner token (Authorization: Bearer <LDBOX_RUNNER_TOKEN>)';

/** True when an `Authorization` header value carries the runner token. */
export type TokenCheck = (authorization: string | string[] | undefined) => boolean;

/**
 * Checks `Authorization: Bearer <token>`. Compared in constant time over hashes, so neither the content
 * nor the length of the token leaks through timing.
 */
export function createTokenCheck(token: string): TokenCheck {
  const expected = digest(`Bearer ${token}`);
  return (authorization) => timingSafeEqual(digest(typeof authorization === 'string' ? authorization : ''), expected);
}

/**
 * Requires `Authorization: Bearer <token>` on every call except to the services in `open` (health
 * checks must work for load balancers without the token). For the calls connect-node serves; the
 * runner's own Execute routes (execute-route.ts) use the same {@link TokenCheck} before reading the body.
 */
export function bearerAuth(token: string, open: ReadonlySet<string>): Interceptor {
  const allows = createTokenCheck(token);
  return (next) => async (req) => {
    if (!open.has(req.service.typeName) && !allows(req.header.get('authorization') ?? '')) {
      throw new ConnectError(UNAUTHENTICATED_MESSAGE, Code.Unauthenticated);
    }
    return next(req);
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
