/**
 * The control plane: `WorkflowService` and `WorkspaceService` (proto/ldbox/workflows/v1/workflows.proto)
 * on the gateway's HTTP/1.1 port with connect-node, so Connect JSON works with curl:
 *
 *   curl -H 'authorization: Bearer $LDBOX_ADMIN_TOKEN' -H 'content-type: application/json' \
 *     -d '{"name":"n","workspace":"w","nodes":[{"id":"a","code":"return 1"}]}' \
 *     http://127.0.0.1:8080/ldbox.workflows.v1.WorkflowService/CreateWorkflow
 *
 * gRPC needs HTTP/2, which this HTTP/1.1 port does not speak; gRPC-Web and Connect (JSON and binary) are
 * served. Every call needs `Authorization: Bearer $LDBOX_ADMIN_TOKEN` (compared over SHA-256 digests in
 * constant time) → otherwise UNAUTHENTICATED (HTTP 401).
 *
 * One error per failure (STYLE.md): unknown id → NOT_FOUND, bad paging or budget → INVALID_ARGUMENT, thrown
 * here as ConnectErrors; everything else through the table in control-plane-errors.ts (WorkflowValidationError
 * → INVALID_ARGUMENT, NATS not reachable → UNAVAILABLE, anything else → INTERNAL "internal error", …).
 *
 * Read-your-writes: a call that changes a workflow returns once this gateway's workflow cache shows the
 * change (at most {@link CACHE_WAIT_MS}), so a webhook sent right after CreateWorkflow is not a 404.
 *
 * Workflows over time: UpdateWorkflow (compare-and-set, the version bumped), ListExecutions and
 * ReplayExecutions with filters (src/store/execution-repository.ts, `list`), ReplayExecution(s) publish a job
 * like the webhook route (through the same publisher), CancelExecution writes the `cancelled` record and
 * announces it on `ldbox.cancel.<executionId>` so that the executor running it stops.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { create } from '@bufbuild/protobuf';
import { type Timestamp, timestampDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type ConnectRouter, type HandlerContext, type Interceptor } from '@connectrpc/connect';
import type { GatewayConfig } from './gateway-config.js';
import { bearerAuth, createTokenCheck, type TokenCheck } from '../src/connect/bearer-auth.js';
import {
  CancelExecutionResponseSchema,
  CreateWorkflowResponseSchema,
  type ExecutionStatus,
  DeleteWorkflowResponseSchema,
  GetExecutionResponseSchema,
  GetWorkflowResponseSchema,
  GetWorkspaceResponseSchema,
  ListExecutionsResponseSchema,
  ListWorkflowsResponseSchema,
  ReplayExecutionResponseSchema,
  ReplayExecutionsResponseSchema,
  RotateWebhookSecretResponseSchema,
  SetWebhookAuthMethodResponseSchema,
  SetWorkspaceBudgetResponseSchema,
  UpdateWorkflowResponseSchema,
  WorkflowService,
  WorkspaceService,
} from '../src/gen/ldbox/workflows/v1/workflows_pb.js';
import type { Logger } from '../src/logging/logger.js';
import { controlPlaneConnectError } from './control-plane-errors.js';
import type { KvCache } from '../src/nats/kv-cache.js';
import {
  type ExecutionFilter,
  type ExecutionRecord,
  type ExecutionRepository,
  executionStatusFromProto,
  type ExecutionStatusName,
  queuedRecord,
  toProtoExecution,
} from '../src/store/execution-repository.js';
import { jobSubject, JOBS_STREAM } from '../src/nats/streams.js';
import { newExecutionId } from '../src/workflows/ids.js';
import { WorkflowValidationError } from '../src/workflows/validation-error.js';
import type { WebhookJob } from '../src/workflows/webhook-job.js';
import type { Publisher } from '../src/nats/publish-batcher.js';
import { keepProtoKeysTextEncoder, type ProtoEncoding } from '../src/json/proto-keys.js';
import type { WorkflowRepository } from '../src/store/workflow-repository.js';
import { spendingCapRetryAfter, toProtoWorkspace, type WorkspaceRepository } from '../src/store/workspace-repository.js';
import { applyWebhookAuthSettings, rotateWebhookSecret } from '../src/workflows/webhook-secret.js';
import {
  applyWorkflowUpdate,
  authMethodFromProto,
  checkExecutionId,
  checkWorkflowId,
  checkWorkspaceName,
  createWorkflowRecord,
  EXECUTION_PAGE_SIZE,
  gracePeriodFromProto,
  resolvePageSize,
  signaturePresetFromProto,
  toProtoWebhook,
  toProtoWorkflow,
  validateCreateWorkflow,
  validateUpdateWorkflow,
  WORKFLOW_PAGE_SIZE,
  type WorkflowRecord,
  workflowUpdateConflict,
} from '../src/workflows/workflow-model.js';

/** Longest wait for this gateway's cache to show a change before the call returns anyway. */
export const CACHE_WAIT_MS = 2000;

export interface ControlPlaneStores {
  workflows: WorkflowRepository;
  executions: ExecutionRepository;
  workspaces: WorkspaceRepository;
  /** The server's max_payload: the largest workflow record that can be stored. */
  maxPayload: number | undefined;
  /** Tells the executors that an execution was cancelled (core NATS, src/nats/streams.ts `cancelSubject`). */
  announceCancel: (executionId: string) => void;
}

export interface ControlPlaneDeps {
  config: GatewayConfig;
  stores: () => ControlPlaneStores | undefined;
  workflowCache: KvCache<WorkflowRecord>;
  /** Queues the jobs of ReplayExecution(s), as the webhook route queues its own. */
  publisher: Publisher;
  log: Logger;
  now?: () => Date;
}

const UNAUTHENTICATED_MESSAGE = 'missing or wrong admin token: send Authorization: Bearer <LDBOX_ADMIN_TOKEN>';

/** At most this much of an unauthenticated request's body is read (and dropped) before its connection is closed. */
export const UNAUTHENTICATED_BODY_BYTES = 64 * 1024;

/** True when an `Authorization` header value carries the admin token (the shared constant-time check). */
export function adminTokenCheck(token: string): TokenCheck {
  return createTokenCheck(token);
}

/**
 * Requires `Authorization: Bearer <admin token>` on every call. The gateway checks the same on the
 * request head before connect-node sees the call ({@link sendUnauthenticated}); this keeps the services
 * closed wherever they are mounted.
 */
export function adminAuth(token: string): Interceptor {
  return bearerAuth(token, { message: UNAUTHENTICATED_MESSAGE });
}

/**
 * UNAUTHENTICATED as connect-node would answer it, written without reading the body: gRPC-Web as a
 * trailers-only 200 with `grpc-status: 16`, Connect (and anything else) as HTTP 401 with the Connect
 * error JSON.
 */
export function sendUnauthenticated(req: IncomingMessage, res: ServerResponse): void {
  const type = req.headers['content-type'] ?? '';
  if (type.startsWith('application/grpc-web')) {
    res.writeHead(200, {
      'content-type': type.split(';', 1)[0]!,
      'grpc-status': String(Code.Unauthenticated),
      'grpc-message': encodeURIComponent(UNAUTHENTICATED_MESSAGE),
      'content-length': '0',
    });
    res.end();
    return;
  }
  const body = Buffer.from(JSON.stringify({ code: 'unauthenticated', message: UNAUTHENTICATED_MESSAGE }), 'utf8');
  res.writeHead(401, { 'content-type': 'application/json', 'content-length': String(body.length) });
  res.end(body);
}

/** Registers both services on `router`. */
export function registerControlPlane(router: ConnectRouter, deps: ControlPlaneDeps): void {
  const now = () => deps.now?.() ?? new Date();
  const stores = (): ControlPlaneStores => {
    const s = deps.stores();
    if (!s) throw new ConnectError('NATS is not reachable: try again shortly', Code.Unavailable);
    return s;
  };
  const wrap =
    <Req, Res>(method: string, f: (req: Req, ctx: HandlerContext) => Promise<Res>) =>
    async (req: Req, ctx: HandlerContext): Promise<Res> => {
      try {
        return await f(req, ctx);
      } catch (err) {
        throw controlPlaneConnectError(err, method, deps.log);
      }
    };
  const toProto = (record: WorkflowRecord, ctx: HandlerContext, secret?: string) =>
    toProtoWorkflow(record, { baseUrl: deps.config.baseUrl, now: now(), secret, encoding: responseEncoding(ctx) });
  const cacheShows = (id: string, record: WorkflowRecord | undefined) =>
    waitForCache(deps.workflowCache, id, (v) => (record === undefined ? v === undefined : v !== undefined && JSON.stringify(v) === JSON.stringify(record)));

  router.service(WorkflowService, {
    createWorkflow: wrap('CreateWorkflow', async (req, ctx) => {
      const draft = validateCreateWorkflow(req);
      const s = stores();
      const { record, secret } = createWorkflowRecord(draft, { now: now() });
      const size = Buffer.byteLength(JSON.stringify(record), 'utf8');
      if (s.maxPayload !== undefined && size > s.maxPayload) {
        throw new ConnectError(`the workflow is ${size} bytes of JSON, over the NATS max_payload of ${s.maxPayload} bytes`, Code.InvalidArgument);
      }
      await s.workflows.create(record);
      await cacheShows(record.id, record);
      deps.log.info({ workflowId: record.id, workspace: record.workspace, authMethod: record.webhook.auth.method }, 'workflow created');
      return create(CreateWorkflowResponseSchema, { workflow: toProto(record, ctx, secret) });
    }),
    getWorkflow: wrap('GetWorkflow', async (req, ctx) => {
      checkWorkflowId(req.id);
      const record = await stores().workflows.get(req.id);
      if (!record) throw notFound(`workflow ${req.id} not found`);
      return create(GetWorkflowResponseSchema, { workflow: toProto(record, ctx) });
    }),
    listWorkflows: wrap('ListWorkflows', async (req, ctx) => {
      if (req.workspace !== '') checkWorkspaceName(req.workspace);
      const page = await stores().workflows.list({
        workspace: req.workspace || undefined,
        pageSize: resolvePageSize(req.pageSize, WORKFLOW_PAGE_SIZE),
        pageToken: req.pageToken || undefined,
      });
      if (!page) throw new ConnectError('pageToken is not a token from a previous ListWorkflows call', Code.InvalidArgument);
      const workflows = page.workflows.map((r) => {
        const unreadable = page.unreadable.get(r.id);
        if (!unreadable) return toProto(r, ctx);
        deps.log.warn(
          { method: 'ListWorkflows', workflowId: r.id, keyId: unreadable.keyId, err: unreadable.message },
          'listed a workflow whose stored secrets cannot be opened',
        );
        return toProtoWorkflow(r, { baseUrl: deps.config.baseUrl, now: now(), unreadable: unreadable.message, encoding: responseEncoding(ctx) });
      });
      return create(ListWorkflowsResponseSchema, { workflows, nextPageToken: page.nextPageToken });
    }),
    deleteWorkflow: wrap('DeleteWorkflow', async (req) => {
      checkWorkflowId(req.id);
      if (!(await stores().workflows.delete(req.id))) throw notFound(`workflow ${req.id} not found`);
      await cacheShows(req.id, undefined);
      deps.log.info({ workflowId: req.id }, 'workflow deleted');
      return create(DeleteWorkflowResponseSchema, {});
    }),
    setWebhookAuthMethod: wrap('SetWebhookAuthMethod', async (req) => {
      checkWorkflowId(req.workflowId, 'workflowId');
      const settings = {
        method: authMethodFromProto(req.authMethod, 'authMethod'),
        preset: signaturePresetFromProto(req.signaturePreset, 'signaturePreset'),
        secret: req.secret,
        verifyToken: req.verifyToken,
        deduplicate: req.deduplicateDeliveries,
      };
      const at = now();
      const done = await stores().workflows.update(req.workflowId, (r) => {
        const change = applyWebhookAuthSettings(r.webhook.auth, settings, { now: at });
        return { record: { ...r, webhook: { ...r.webhook, auth: change.state } }, result: change.secret };
      });
      if (!done) throw notFound(`workflow ${req.workflowId} not found`);
      await cacheShows(req.workflowId, done.record);
      deps.log.info(
        {
          workflowId: req.workflowId,
          authMethod: settings.method,
          signaturePreset: settings.preset,
          secretGiven: req.secret !== '',
          secretGenerated: done.result !== undefined,
          verifyTokenSet: req.verifyToken !== '',
        },
        'webhook auth method set',
      );
      return create(SetWebhookAuthMethodResponseSchema, {
        webhook: toProtoWebhook(done.record, { baseUrl: deps.config.baseUrl, now: now(), secret: done.result }),
      });
    }),
    rotateWebhookSecret: wrap('RotateWebhookSecret', async (req) => {
      checkWorkflowId(req.workflowId, 'workflowId');
      const graceMs = gracePeriodFromProto(req.gracePeriod);
      const at = now();
      const done = await stores().workflows.update(req.workflowId, (r) => {
        const change = rotateWebhookSecret(r.webhook.auth, { now: at, graceMs });
        return { record: { ...r, webhook: { ...r.webhook, auth: change.state } }, result: change.secret };
      });
      if (!done) throw notFound(`workflow ${req.workflowId} not found`);
      await cacheShows(req.workflowId, done.record);
      deps.log.info({ workflowId: req.workflowId, graceMs }, 'webhook secret rotated');
      return create(RotateWebhookSecretResponseSchema, {
        webhook: toProtoWebhook(done.record, { baseUrl: deps.config.baseUrl, now: at, secret: done.result }),
      });
    }),
    getExecution: wrap('GetExecution', async (req, ctx) => {
      checkExecutionId(req.id);
      const record = await stores().executions.get(req.id);
      if (!record) throw notFound(`execution ${req.id} not found`);
      return create(GetExecutionResponseSchema, { execution: toProtoExecution(record, responseEncoding(ctx)) });
    }),
    listExecutions: wrap('ListExecutions', async (req, ctx) => {
      const filter = executionFilterFromProto(req);
      const page = await stores().executions.list(filter, {
        pageSize: resolvePageSize(req.pageSize, EXECUTION_PAGE_SIZE),
        pageToken: req.pageToken || undefined,
      });
      if (!page) throw new ConnectError('pageToken is not a token from a previous ListExecutions call', Code.InvalidArgument);
      const encoding = responseEncoding(ctx);
      return create(ListExecutionsResponseSchema, { executions: page.executions.map((r) => toProtoExecution(r, encoding)), nextPageToken: page.nextPageToken });
    }),
    updateWorkflow: wrap('UpdateWorkflow', async (req, ctx) => {
      const update = validateUpdateWorkflow(req);
      const s = stores();
      const at = now();
      const done = await s.workflows.update(update.id, (r) => {
        const conflict = workflowUpdateConflict(r, update);
        if (conflict) {
          const code = conflict.field === 'workflow.version' ? Code.Aborted : Code.InvalidArgument;
          throw new ConnectError(conflict.message, code);
        }
        const record = applyWorkflowUpdate(r, update, at);
        const size = Buffer.byteLength(JSON.stringify(record), 'utf8');
        if (s.maxPayload !== undefined && size > s.maxPayload) {
          throw new ConnectError(`the workflow is ${size} bytes of JSON, over the NATS max_payload of ${s.maxPayload} bytes`, Code.InvalidArgument);
        }
        return { record, result: undefined };
      });
      if (!done) throw notFound(`workflow ${update.id} not found`);
      await cacheShows(update.id, done.record);
      deps.log.info({ workflowId: update.id, version: done.record.version }, 'workflow updated');
      return create(UpdateWorkflowResponseSchema, { workflow: toProto(done.record, ctx) });
    }),
    replayExecution: wrap('ReplayExecution', async (req, ctx) => {
      checkExecutionId(req.id);
      const s = stores();
      const original = await s.executions.get(req.id);
      if (!original) throw notFound(`execution ${req.id} not found`);
      const replayed = await replay(original, s);
      deps.log.info({ executionId: replayed.id, workflowId: replayed.workflowId, replayOf: req.id }, 'execution replayed');
      return create(ReplayExecutionResponseSchema, { execution: toProtoExecution(replayed, responseEncoding(ctx)) });
    }),
    replayExecutions: wrap('ReplayExecutions', async (req) => {
      const filter = executionFilterFromProto(req);
      if (filter.workflowId === undefined && filter.statuses === undefined && filter.createdAfter === undefined && filter.createdBefore === undefined) {
        throw new ConnectError(
          'give at least one filter (workflowId, statuses, createdAfter or createdBefore): replaying every execution is refused',
          Code.InvalidArgument,
        );
      }
      const s = stores();
      // The matching set is read first, so that the replays (new executions) are not replayed in turn.
      const matching = await s.executions.listAll(filter);
      let count = 0;
      for (const original of matching) {
        try {
          await replay(original, s);
          count++;
        } catch (err) {
          // A deleted workflow's executions are skipped; anything else stops the call (what was queued stays).
          if (!(err instanceof ConnectError && err.code === Code.FailedPrecondition)) throw err;
        }
      }
      deps.log.info({ matching: matching.length, count, workflowId: filter.workflowId }, 'executions replayed');
      return create(ReplayExecutionsResponseSchema, { count });
    }),
    cancelExecution: wrap('CancelExecution', async (req, ctx) => {
      checkExecutionId(req.id);
      const s = stores();
      const done = await s.executions.cancel(req.id, now());
      if (!done) throw notFound(`execution ${req.id} not found`);
      if (!done.cancelled) {
        throw new ConnectError(
          `execution ${req.id} has already ended (${done.record.status}): only queued or running executions can be cancelled`,
          Code.FailedPrecondition,
        );
      }
      s.announceCancel(req.id);
      deps.log.info({ executionId: req.id, workflowId: done.record.workflowId }, 'execution cancelled');
      return create(CancelExecutionResponseSchema, { execution: toProtoExecution(done.record, responseEncoding(ctx)) });
    }),
  });

  /**
   * Queues `original`'s trigger again as a new execution of its workflow's current version (as a webhook
   * call would, without the rate limit): the job's `replayOf` names the original.
   */
  async function replay(original: ExecutionRecord, s: ControlPlaneStores): Promise<ExecutionRecord> {
    const workflow = await s.workflows.get(original.workflowId);
    if (!workflow) {
      throw new ConnectError(
        `workflow ${original.workflowId} of execution ${original.id} was deleted: there is nothing to replay it with`,
        Code.FailedPrecondition,
      );
    }
    const at = now();
    const capRetry = spendingCapRetryAfter(await s.workspaces.get(workflow.workspace, at), at);
    if (capRetry !== undefined) {
      throw new ConnectError(`workspace ${workflow.workspace} has spent its monthly budget: nothing runs until the next month (UTC)`, Code.ResourceExhausted);
    }
    const executionId = newExecutionId(at);
    const job: WebhookJob = {
      v: 1,
      executionId,
      workflowId: workflow.id,
      workspace: workflow.workspace,
      receivedAt: at.toISOString(),
      trigger: original.trigger,
      replayOf: original.id,
    };
    const pub = await deps.publisher.publish(jobSubject(workflow.id, executionId), Buffer.from(JSON.stringify(job), 'utf8'), {
      msgID: executionId,
      expectStream: JOBS_STREAM,
    });
    if (!pub.ok) {
      deps.log.warn({ workflowId: workflow.id, replayOf: original.id, error: pub.error, reason: pub.message }, 'replay not queued');
      const code = pub.error === 'unavailable' || pub.error === 'full' ? Code.Unavailable : pub.error === 'too_large' ? Code.InvalidArgument : Code.Internal;
      throw new ConnectError(`the replay of ${original.id} was not queued: ${pub.error === 'rejected' ? 'the stream refused it' : pub.message}`, code);
    }
    return queuedRecord(job);
  }

  router.service(WorkspaceService, {
    getWorkspace: wrap('GetWorkspace', async (req) => {
      checkWorkspaceName(req.name, 'name');
      return create(GetWorkspaceResponseSchema, { workspace: toProtoWorkspace(await stores().workspaces.get(req.name, now())) });
    }),
    setWorkspaceBudget: wrap('SetWorkspaceBudget', async (req) => {
      checkWorkspaceName(req.name, 'name');
      if (req.monthlyBudgetUnits > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new ConnectError(`monthlyBudgetUnits must be at most ${Number.MAX_SAFE_INTEGER}, got ${req.monthlyBudgetUnits}`, Code.InvalidArgument);
      }
      const record = await stores().workspaces.setBudget(req.name, Number(req.monthlyBudgetUnits), now());
      deps.log.info({ workspace: req.name, monthlyBudgetUnits: record.monthlyBudgetUnits }, 'workspace budget set');
      return create(SetWorkspaceBudgetResponseSchema, { workspace: toProtoWorkspace(record) });
    }),
  });
}

/**
 * How the answer to this call will be encoded (the request's): JSON for `application/json` and
 * `application/grpc-web+json`, binary otherwise. Workflows and execution records are built for it so
 * that an own `__proto__` key stays data (src/json/proto-keys.ts; the JSON serializer restores it, see
 * {@link controlPlaneJsonOptions}). Requests keep theirs through request-proto-keys.ts.
 */
function responseEncoding(ctx: HandlerContext): ProtoEncoding {
  const type = (ctx.requestHeader.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
  return type.endsWith('json') ? 'json' : 'binary';
}

/**
 * connect-node's JSON options for the control plane: strict (an unknown field or enum name is
 * INVALID_ARGUMENT naming it, not silently dropped; strict-enums.ts), and the text encoder that writes
 * the stand-ins of own `__proto__` keys back (src/json/proto-keys.ts). connect passes the options on to
 * its JSON serialization, which takes `textEncoder` from them.
 */
export function controlPlaneJsonOptions(): { ignoreUnknownFields: boolean } {
  const options = { ignoreUnknownFields: false, textEncoder: keepProtoKeysTextEncoder };
  return options;
}

/** The filters of ListExecutions and ReplayExecutions, checked (each refusal names its field). */
export function executionFilterFromProto(req: {
  workflowId: string;
  statuses: ExecutionStatus[];
  createdAfter?: Timestamp | undefined;
  createdBefore?: Timestamp | undefined;
}): ExecutionFilter {
  const filter: ExecutionFilter = {};
  if (req.workflowId !== '') {
    checkWorkflowId(req.workflowId, 'workflowId');
    filter.workflowId = req.workflowId;
  }
  if (req.statuses.length > 0) {
    const statuses = new Set<ExecutionStatusName>();
    for (const [i, st] of req.statuses.entries()) {
      const name = executionStatusFromProto(st);
      if (name === undefined) {
        throw new WorkflowValidationError(
          `statuses[${i}]`,
          `statuses[${i}] must be a status an execution can have (EXECUTION_STATUS_QUEUED, _RUNNING, _SUCCEEDED, _FAILED or _CANCELLED), got ${st}`,
        );
      }
      statuses.add(name);
    }
    filter.statuses = statuses;
  }
  const time = (t: Timestamp | undefined, field: string): Date | undefined => {
    if (t === undefined) return undefined;
    const d = timestampDate(t);
    if (Number.isNaN(d.getTime()) || t.nanos < 0 || t.nanos > 999_999_999) throw new WorkflowValidationError(field, `${field} is not a valid time`);
    return d;
  };
  const after = time(req.createdAfter, 'createdAfter');
  const before = time(req.createdBefore, 'createdBefore');
  if (after !== undefined) filter.createdAfter = after;
  if (before !== undefined) filter.createdBefore = before;
  if (after !== undefined && before !== undefined && after.getTime() >= before.getTime()) {
    throw new WorkflowValidationError('createdBefore', `createdBefore (${before.toISOString()}) must be later than createdAfter (${after.toISOString()})`);
  }
  return filter;
}

function notFound(message: string): ConnectError {
  return new ConnectError(message, Code.NotFound);
}

/** Resolves once `cache.get(id)` satisfies `ok`, or after {@link CACHE_WAIT_MS}. */
function waitForCache<T>(cache: KvCache<T>, id: string, ok: (v: T | undefined) => boolean): Promise<void> {
  if (cache.ready && ok(cache.get(id))) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      off();
      resolve();
    };
    const timer = setTimeout(done, CACHE_WAIT_MS);
    const off = cache.onChange((key, value) => {
      if (key === id && ok(value)) done();
    });
  });
}
