/**
 * The control plane's error table (gateway/control-plane-errors.ts), whole: each row's class, code and
 * message policy, and for every row an error of that class mapped to exactly that code and message, the
 * error kept as the answer's `cause`, logged when (and only when) the row says so.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import t from 'tap';
import { CONTROL_PLANE_ERRORS, controlPlaneConnectError } from '../../gateway/control-plane-errors.js';
import { OWN_MESSAGE, rowOf } from '../../src/connect/connect-error-table.js';
import { NatsUnavailableError } from '../../src/nats/connect.js';
import { SecretUnavailableError, StoreConflictError, StoreUnavailableError } from '../../src/store/store-errors.js';
import { WorkflowValidationError } from '../../src/workflows/validation-error.js';
import { capturingLogger, tableSummary } from '../helpers/error-tables.js';

t.test('the table', async (t) => {
  t.same(tableSummary(CONTROL_PLANE_ERRORS), {
    WorkflowValidationError: ['InvalidArgument', 'own message', 'no log'],
    StoreUnavailableError: ['Unavailable', 'NATS is not reachable: try again shortly', 'warn: control plane call failed: NATS unavailable'],
    NatsUnavailableError: ['Unavailable', 'NATS is not reachable: try again shortly', 'warn: control plane call failed: NATS unavailable'],
    StoreConflictError: ['Aborted', 'own message', 'no log'],
    SecretUnavailableError: ['FailedPrecondition', 'own message', 'error: a stored secret cannot be opened'],
    Error: ['Internal', 'internal error', 'error: control plane call failed'],
  });
});

/** One error per row, keyed like the table. */
const CASES: Record<keyof typeof CONTROL_PLANE_ERRORS, Error> = {
  WorkflowValidationError: new WorkflowValidationError('nodes[0].id', 'nodes[0].id must not be empty'),
  StoreUnavailableError: new StoreUnavailableError('KV get timed out'),
  NatsUnavailableError: new NatsUnavailableError('not connected to NATS'),
  StoreConflictError: new StoreConflictError('workflow wf_1 changed 5 times while updating: retry'),
  SecretUnavailableError: new SecretUnavailableError('node a of workflow wf_1: data key k1 is not configured', 'k1'),
  Error: new TypeError("Cannot read properties of undefined (reading 'x')"),
};

t.test('every row: its code, its message, the error as cause, a log line when the row says so', async (t) => {
  t.same(Object.keys(CASES), Object.keys(CONTROL_PLANE_ERRORS), 'a case for every row');
  for (const [name, err] of Object.entries(CASES)) {
    const row = CONTROL_PLANE_ERRORS[name as keyof typeof CONTROL_PLANE_ERRORS];
    if (name !== 'Error') t.equal(err.name, name, `${name}: the case is of the row's class`);
    t.equal(rowOf(CONTROL_PLANE_ERRORS, err), row, `${name}: matched by its own row`);
    const message = row.message === OWN_MESSAGE ? err.message : row.message;

    const log = capturingLogger();
    const c = controlPlaneConnectError(err, 'CreateWorkflow', log.logger);
    t.same([c.code, c.rawMessage, c.cause], [row.code, message, err], `${name}: ConnectError`);
    const logged = 'log' in row ? [{ level: row.log.level, msg: row.log.msg, method: 'CreateWorkflow', errMessage: err.message }] : [];
    t.same(log.lines(), logged, `${name}: logged`);
  }
});

t.test('a ConnectError a handler throws is already the answer', async (t) => {
  const e = new ConnectError('workflow wf_1 not found', Code.NotFound);
  const log = capturingLogger();
  t.equal(controlPlaneConnectError(e, 'GetWorkflow', log.logger), e);
  t.same(log.lines(), []);
});
