/**
 * The one bearer check (src/connect/bearer-auth.ts), used by the runner and the control plane: which header
 * values pass, and the interceptor's UNAUTHENTICATED with the edge's message, open services excepted.
 * Each edge's test checks it over the wire (test/runner/limits-and-requests.test.ts,
 * test/gateway/control-plane.test.ts).
 */
import t from 'tap';
import { Code, ConnectError } from '@connectrpc/connect';
import { bearerAuth, createTokenCheck } from '../../src/connect/bearer-auth.js';

t.test('createTokenCheck: only the exact "Bearer <token>" passes', async (t) => {
  const check = createTokenCheck('s3cret');
  t.same(
    ['Bearer s3cret', 'Bearer s3cre', 'Bearer s3cret ', 'bearer s3cret', 's3cret', '', undefined, ['Bearer s3cret']].map((v) => check(v)),
    [true, false, false, false, false, false, false, false],
  );
});

t.test('bearerAuth: UNAUTHENTICATED with the message, except for open services', async (t) => {
  const interceptor = bearerAuth('s3cret', { message: 'send the token', open: new Set(['grpc.health.v1.Health']) });
  const call = (service: string, authorization?: string) => {
    const header = new Headers(authorization === undefined ? {} : { authorization });
    // Only the fields the interceptor reads; `next` answers 'passed'.
    const next = interceptor(async () => 'passed' as never);
    return next({ service: { typeName: service }, header } as never);
  };
  t.equal(await call('ldbox.runner.v1.RunnerService', 'Bearer s3cret'), 'passed');
  t.equal(await call('grpc.health.v1.Health'), 'passed', 'open service: no token needed');
  const err = await call('ldbox.runner.v1.RunnerService', 'Bearer nope').catch((e: unknown) => e);
  t.ok(err instanceof ConnectError);
  t.same([(err as ConnectError).code, (err as ConnectError).rawMessage], [Code.Unauthenticated, 'send the token']);
});
