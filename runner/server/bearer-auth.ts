/**
 * The runner's token check: the shared bearer check (src/connect/bearer-auth.ts) with the runner's message.
 * Kept as a module so the Execute routes (execute-route.ts) and the server import it under the runner's names.
 */
import type { Interceptor } from '@connectrpc/connect';
import { bearerAuth as sharedBearerAuth } from '../../src/connect/bearer-auth.js';

export { createTokenCheck, type TokenCheck } from '../../src/connect/bearer-auth.js';

/** What a caller without the right token is told (UNAUTHENTICATED). */
export const UNAUTHENTICATED_MESSAGE = 'missing or wrong runner token (Authorization: Bearer <LDBOX_RUNNER_TOKEN>)';

/**
 * Requires `Authorization: Bearer <token>` on every call connect-node serves except to the services in
 * `open`; the runner's own Execute routes use the same check before reading the body.
 */
export function bearerAuth(token: string, open: ReadonlySet<string>): Interceptor {
  return sharedBearerAuth(token, { message: UNAUTHENTICATED_MESSAGE, open });
}
