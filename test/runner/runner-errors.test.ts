/**
 * The runner's error table (runner/server/runner-errors.ts), whole: each row's class, code and message
 * policy, and for every row an error of that class mapped to exactly that code and message, the error kept
 * as the answer's `cause`, logged when (and only when) the row says so.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import t from 'tap';
import { OWN_MESSAGE, rowOf } from '../../src/connect/connect-error-table.js';
import { PoolCancelledError, PoolClosedError, PoolFullError, PoolInternalError, PoolUnavailableError } from '../../runner/pool/index.js';
import { RUNNER_ERRORS, runnerCallStatus, runnerConnectError } from '../../runner/server/runner-errors.js';
import { InvalidRequestError } from '../../runner/wire/execute-request.js';
import { capturingLogger, tableSummary } from '../helpers/error-tables.js';

t.test('the table', async (t) => {
  t.same(tableSummary(RUNNER_ERRORS), {
    InvalidRequestError: ['InvalidArgument', 'own message', 'no log'],
    PoolFullError: ['ResourceExhausted', 'own message', 'no log'],
    PoolClosedError: ['Unavailable', 'own message', 'no log'],
    PoolUnavailableError: ['Unavailable', 'own message', 'no log'],
    PoolCancelledError: ['Canceled', 'the call was cancelled', 'no log'],
    PoolInternalError: ['Internal', 'the sandbox failed to run the call; it is safe to retry', 'error: sandbox call failed'],
    Error: ['Internal', 'internal error', 'error: unexpected error in Execute'],
  });
});

/** One error per row, keyed like the table. */
const CASES: Record<keyof typeof RUNNER_ERRORS, Error> = {
  InvalidRequestError: new InvalidRequestError('timeoutMs must be at most 60000, got 70000'),
  PoolFullError: new PoolFullError("the runner's queue is full (2 calls waiting): retry later"),
  PoolClosedError: new PoolClosedError('the runner is shutting down'),
  PoolUnavailableError: new PoolUnavailableError('the call lost its worker: retry'),
  PoolCancelledError: new PoolCancelledError('cancelled'),
  PoolInternalError: new PoolInternalError('worker exited with code 1 at /srv/ldbox/worker.js', { cause: new Error('segfault') }),
  Error: new Error('a bug with a /host/path'),
};

t.test('every row: its code, its message, the error as cause, a log line when the row says so', async (t) => {
  t.same(Object.keys(CASES), Object.keys(RUNNER_ERRORS), 'a case for every row');
  const notCancelled = { signal: new AbortController().signal };
  for (const [name, err] of Object.entries(CASES)) {
    const row = RUNNER_ERRORS[name as keyof typeof RUNNER_ERRORS];
    t.equal(err.name, name, `${name}: the case is of the row's class`);
    t.equal(rowOf(RUNNER_ERRORS, err), row, `${name}: matched by its own row`);
    const message = row.message === OWN_MESSAGE ? err.message : row.message;

    const log = capturingLogger();
    const c = runnerConnectError(err, notCancelled, 'req-1', log.logger);
    t.same([c.code, c.rawMessage, c.cause], [row.code, message, err], `${name}: ConnectError`);
    // pino's error serializer appends the causes' messages: the worker's error reaches the log.
    const errMessage = err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message;
    const logged = 'log' in row ? [{ level: row.log.level, msg: row.log.msg, requestId: 'req-1', errMessage }] : [];
    t.same(log.lines(), logged, `${name}: logged`);

    const status = runnerCallStatus(err, undefined, capturingLogger().logger);
    t.same(status, { code: row.code, message }, `${name}: the runner's own routes answer the same`);
  }
});

t.test('a cancelled call answers with the reason on the handler signal (the client deadline)', async (t) => {
  const ac = new AbortController();
  const deadline = new ConnectError('the operation timed out', Code.DeadlineExceeded);
  ac.abort(deadline);
  t.equal(runnerConnectError(new PoolCancelledError('cancelled'), { signal: ac.signal }, 'req-1', capturingLogger().logger), deadline);
});

t.test('a ConnectError is already an answer', async (t) => {
  const e = new ConnectError('no', Code.PermissionDenied);
  t.equal(runnerConnectError(e, { signal: new AbortController().signal }, undefined, capturingLogger().logger), e);
});
