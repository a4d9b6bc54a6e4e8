import { createHash, timingSafeEqual } from 'node:crypto';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';

/**
 * Requires `Authorization: Bearer <token>` on every call except to the services in `open` (health
 * checks must work for load balancers without the token). Compared in constant time over hashes, so
 * neither the content nor the length of the token leaks through timing.
 */
export function bearerAuth(token: string, open: ReadonlySet<string>): Interceptor {
  const expected = digest(`Bearer ${token}`);
  return (next) => async (req) => {
    if (!open.has(req.service.typeName)) {
      const given = req.header.get('authorization') ?? '';
      if (!timingSafeEqual(digest(given), expected)) {
        throw new ConnectError('missing or wrong runner token (Authorization: Bearer <LDBOX_RUNNER_TOKEN>)', Code.Unauthenticated);
      }
    }
    return next(req);
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
