/**
 * The control-plane commands' client: the generated WorkflowService client over Connect (binary, HTTP/1.1,
 * the gateway's port), every call with `Authorization: Bearer $LDBOX_ADMIN_TOKEN` and a deadline; and the
 * one line a failed call is shown as (no stack): the gateway's own message for its refusals
 * (INVALID_ARGUMENT naming the node and position is printed as the gateway wrote it), a readable line for a
 * gateway that cannot be reached.
 *
 * Tests: test/cli/control-plane-cli.test.ts.
 */
import type { Client, ConnectError } from '@connectrpc/connect';
import type { WorkflowService } from '../gen/ldbox/workflows/v1/workflows_pb.js';
import type { ControlPlaneClientConfig } from './control-plane-config.js';

// Connect and its Node transport (~140 modules, ~0.3 s of a start) are imported when a client is created,
// after the arguments and settings were read: a --help, a usage or a configuration error does not load them.
// An error can only be a ConnectError once they are loaded, so the error helpers below use the module that
// createWorkflowClient loaded, and take any error for a plain one before that.
let connect: typeof import('@connectrpc/connect') | undefined;

/** The deadline of one control-plane call. */
export const CALL_TIMEOUT_MS = 30_000;

export type WorkflowClient = Client<typeof WorkflowService>;

export async function createWorkflowClient(config: ControlPlaneClientConfig): Promise<WorkflowClient> {
  const [connectModule, { createConnectTransport }, { WorkflowService }] = await Promise.all([
    import('@connectrpc/connect'),
    import('@connectrpc/connect-node'),
    import('../gen/ldbox/workflows/v1/workflows_pb.js'),
  ]);
  connect = connectModule;
  const transport = createConnectTransport({
    baseUrl: config.url,
    httpVersion: '1.1',
    useBinaryFormat: true,
    defaultTimeoutMs: CALL_TIMEOUT_MS,
    interceptors: [
      (next) => (req) => {
        req.header.set('authorization', `Bearer ${config.adminToken}`);
        return next(req);
      },
    ],
  });
  return connect.createClient(WorkflowService, transport);
}

/** Network errors that mean "nothing answered there", by errno code. */
const UNREACHABLE: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be resolved',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
};

/** The errno code under a ConnectError (connect-node keeps the socket error as `cause`, sometimes nested). */
function errnoCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e !== undefined && e !== null; i++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code in UNREACHABLE) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * One line (no newline) for a failed call: `cannot reach the gateway at URL: connection refused
 * (ECONNREFUSED)`, or the gateway's message and its code, `nodes[0].code: … (invalid_argument)`.
 */
export function callErrorMessage(err: unknown, url: string): string {
  const errno = errnoCode(err);
  if (errno !== undefined) return `cannot reach the gateway at ${url}: ${UNREACHABLE[errno]} (${errno}); is it running, and is LDBOX_URL right?`;
  const code = connectCode(err);
  if (code === undefined) return (err as Error)?.message ?? String(err);
  const { rawMessage } = err as ConnectError;
  if (code === 'DeadlineExceeded') return `the gateway at ${url} did not answer within ${CALL_TIMEOUT_MS / 1000} s`;
  if (code === 'Unauthenticated') return `${rawMessage} (the gateway at ${url} refused LDBOX_ADMIN_TOKEN)`;
  return `${rawMessage} (${snakeCase(code)})`;
}

/** True when `err` is the gateway being unreachable or refusing the token: no later call can do better. */
export function isFatalCallError(err: unknown): boolean {
  if (errnoCode(err) !== undefined) return true;
  const code = connectCode(err);
  return code === 'Unauthenticated' || code === 'Unavailable' || code === 'DeadlineExceeded';
}

/** True when `err` may pass by itself (the gateway is away or slow, e.g. restarting): a poller asks again. */
export function isTransientCallError(err: unknown): boolean {
  if (errnoCode(err) !== undefined) return true;
  const code = connectCode(err);
  return code === 'Unavailable' || code === 'DeadlineExceeded';
}

/**
 * The name of the Connect code of `err` (`NotFound`, …; the number for a code without a name); undefined
 * when it is no ConnectError (always so before a client was created).
 */
function connectCode(err: unknown): string | undefined {
  if (connect === undefined || !(err instanceof connect.ConnectError)) return undefined;
  return connect.Code[err.code] ?? String(err.code);
}

/** `invalid_argument`, `not_found`, … for `InvalidArgument`, `NotFound`, … */
function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`));
}
