import type { IncomingHttpHeaders } from 'node:http';
import { Code } from '@connectrpc/connect';
import type { RunnerConfig } from '../config/index.js';
import type { Logger } from '../../src/logging/logger.js';
import { CallCancel, type RunnerPool } from '../pool/index.js';
import type { WireEncoding } from '../wire/execute-response.js';
import { UNAUTHENTICATED_MESSAGE, type TokenCheck } from './bearer-auth.js';
import type { ParsedTimeout } from './call-deadline.js';
import { runnerCallStatus } from './runner-errors.js';
import { type ExecuteOutcome, outcomeOfCode, type RunnerMetrics } from './runner-metrics.js';
import type { UnaryCall } from './unary-call.js';

export interface ExecuteRouteOptions {
  pool: RunnerPool;
  config: RunnerConfig;
  metrics: RunnerMetrics;
  log: Logger;
  /** Set when LDBOX_RUNNER_TOKEN is. */
  tokenCheck?: TokenCheck | undefined;
}

/** How one call is encoded on the wire (see execute-route's callers in runner-server.ts). */
export interface ExecuteWireForm {
  encoding: WireEncoding;
  /** gRPC: the response gets the 5-byte message header. */
  grpcFramed: boolean;
  /** The client's deadline header, parsed. */
  timeout: ParsedTimeout;
}

/** The largest Execute request message: code + input + auth, and room for the rest. */
export function maxExecuteRequestBytes(config: Pick<RunnerConfig, 'maxCodeBytes' | 'maxInputBytes'>): number {
  return config.maxCodeBytes + 2 * config.maxInputBytes + 64 * 1024;
}

/** The message connect-node and grpc-js send for a passed deadline. */
const DEADLINE_MESSAGE = 'the operation timed out';

/**
 * Serves `RunnerService/Execute` for the calls the runner reads itself (binary gRPC, uncompressed Connect
 * unary): the request's bytes go to a worker, which decodes, validates, runs and encodes; the bytes of
 * the response come back and are written as they are. Same contract as connect-node's Execute
 * (runner-service.ts): the token before the body is read, `grpc-timeout`/`connect-timeout-ms` as the
 * call's deadline, a client that goes away cancels the call in the pool, one status per failure
 * (runner-errors.ts), and one metrics sample per call.
 */
export function createExecuteRoute(options: ExecuteRouteOptions): (call: UnaryCall, headers: IncomingHttpHeaders, form: ExecuteWireForm) => void {
  const { pool, config, metrics, log, tokenCheck } = options;
  const maxRequestBytes = maxExecuteRequestBytes(config);

  return (call, headers, form) => {
    const started = performance.now();
    let observed = false;
    const observe = (outcome: ExecuteOutcome): void => {
      if (observed) return;
      observed = true;
      metrics.observe(outcome, started);
    };
    const fail = (code: Code, message: string): void => {
      if (call.fail(code, message)) observe(outcomeOfCode(code));
    };

    if (tokenCheck && !tokenCheck(headers.authorization)) return fail(Code.Unauthenticated, UNAUTHENTICATED_MESSAGE);
    if (!form.timeout.ok) return fail(Code.InvalidArgument, form.timeout.message);

    const cancel = new CallCancel();
    let deadlineTimer: NodeJS.Timeout | undefined;
    const deadlineMs = form.timeout.ms;
    const deadlineAt = deadlineMs === undefined ? undefined : performance.timeOrigin + started + deadlineMs;
    if (deadlineMs !== undefined) {
      deadlineTimer = setTimeout(() => {
        cancel.cancel();
        fail(Code.DeadlineExceeded, DEADLINE_MESSAGE);
      }, deadlineMs);
    }
    call.onAbandoned(() => {
      clearTimeout(deadlineTimer);
      cancel.cancel();
      observe('cancelled');
    });

    call.read(
      maxRequestBytes,
      (body) => {
        pool
          .executeWire({ body, encoding: form.encoding, grpcFramed: form.grpcFramed, deadlineAt }, cancel)
          .then((reply) => {
            if (reply.status === 'invalid') return fail(Code.InvalidArgument, reply.message);
            if (reply.internalFault !== undefined) {
              log.warn({ requestId: reply.requestId, fault: reply.internalFault }, 'a sandbox built-in failed on the host');
            }
            // The sandbox's time limit was the client's deadline: the client gets the deadline's status.
            if (reply.deadlineExceeded) return fail(Code.DeadlineExceeded, DEADLINE_MESSAGE);
            if (call.answered) return;
            call.reply(reply.body);
            observe(reply.outcome);
            metrics.observeAnswer({
              queueTimeMs: reply.queueTimeMs,
              memoryUsedBytes: reply.memoryUsedBytes,
              // The pool's own answer for a call whose worker it stopped names no kind: it is a timeout.
              errorKind: reply.outcome === 'error' ? (reply.errorKind ?? 'timeout') : undefined,
            });
          })
          .catch((err: unknown) => {
            const { code, message } = runnerCallStatus(err, undefined, log);
            fail(code, message);
          })
          .finally(() => clearTimeout(deadlineTimer));
      },
      (refusal) => {
        clearTimeout(deadlineTimer);
        fail(refusal.code, refusal.message);
      },
    );
  };
}
