/**
 * `POST /api/hooks/workflows/<id>`: the ordered handling of one webhook request (spec: "States and
 * transitions" → the ordered handling; docs/design.md decisions). Each step answers from the one table in
 * webhook-errors.ts:
 *
 * 1. method: anything but POST or GET → 405 with `Allow: POST`;
 * 2. id format → 400 `invalid_workflow_id` (before any lookup);
 * 3. the workflow, from the in-memory KvCache (no NATS round trip) → 404 `workflow_not_found`
 *    (503 `not_ready` until the cache is first loaded);
 * 3a. handshakes, which start no execution: Meta's `GET ?hub.mode=subscribe&hub.challenge=…&hub.verify_token=…`
 *    with the webhook's verify token → 200 with the challenge as text (`invalid_verify_token` otherwise); any
 *    other GET → 405. Microsoft Graph's `POST ?validationToken=…` → 200 `text/plain` with the token (Graph
 *    cannot authenticate its validation call; only the echo is answered);
 * 4. the secret of the active method, constant time → 400 `missing_secret` / `invalid_secret`; with
 *    AUTH_METHOD_SIGNATURE the body is read first and the preset's signature checked over its raw bytes
 *    (src/workflows/webhook-signature.ts) → 400 `missing_signature` / `bad_signature` / `stale_signature`.
 *    A Slack `url_verification` call with a valid signature is answered 200 `{"challenge": …}` here;
 * 5. the workspace's spending cap → 429 `spending_cap_reached`; the workflow's rate, shared by all gateways
 *    (cluster-rate-limiter.ts) → 429 `rate_limited`, both with `Retry-After`; or, for a workflow that
 *    throttles (`overRate: throttle`), accepted with a `notBefore` time when over the rate;
 * 6. the payload: Content-Type, size (413 without reading the rest), JSON object / form, query;
 * 7. `Idempotency-Key` claim (KV create-if-absent; with `deduplicateDeliveries` the platform's delivery id
 *    when no header is sent), the claim of a timestamped signature in `ldbox-signatures` (KV create-if-absent,
 *    so a replay is refused by every gateway → 400 `replayed_signature`; both claims are released when the
 *    job is not stored, so that the sender's retry is not refused), then the JetStream publish awaiting the PubAck,
 *    `Nats-Msg-Id` = execution id; both are tried again while NATS cannot answer (a leader election), within
 *    LDBOX_PUBLISH_TIMEOUT_MS → 503 when not stored by then (never 202), 413 when too large;
 * 8. 202 `{"executionId": "..."}`. No `queued` record is written: until an executor picks the job up, the
 *    stored job is the queued execution (ExecutionRepository reads it from the stream).
 *
 * The job (subject `ldbox.jobs.<workflowId>`) is the JSON {@link WebhookJob} (src/workflows/webhook-job.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KV } from '@nats-io/kv';
import type { GatewayConfig } from './gateway-config.js';
import { answerAfterDiscard } from '../src/http/discard-body.js';
import type { Logger } from '../src/logging/logger.js';
import { type ClaimResult, claimIdempotencyKey, confirmIdempotencyKey, releaseIdempotencyKey } from '../src/nats/idempotency.js';
import type { PublishFailure } from '../src/nats/job-publisher.js';
import type { KvCache } from '../src/nats/kv-cache.js';
import { jobSubject, JOBS_STREAM, maxJobBytes } from '../src/nats/streams.js';
import { NOT_BEFORE_HEADER } from '../src/nats/job-consumer.js';
import { spendingCapRetryAfter, type WorkspaceRecord } from '../src/store/workspace-repository.js';
import { isWorkflowId, newExecutionId } from '../src/workflows/ids.js';
import {
  authenticateWebhookRequest,
  type RandomBytes,
  signingSecrets,
  verifyTokenMatches,
  type WebhookSigning,
  WEBHOOK_SECRET_QUERY_PARAMETER,
} from '../src/workflows/webhook-secret.js';
import { deliveryId, type HeaderReader, verifySignature } from '../src/workflows/webhook-signature.js';
import { type ReplayClaim, claimSignature, releaseSignature } from '../src/nats/signature-replay.js';
import type { WebhookJob } from '../src/workflows/webhook-job.js';
import type { WorkflowRecord } from '../src/workflows/workflow-model.js';
import { retryPauseMs } from './publish-batch.js';
import type { Publisher } from '../src/nats/publish-batcher.js';
import type { ClusterRateLimiter } from './cluster-rate-limiter.js';
import { sendError, sendJson, WebhookError } from './webhook-errors.js';
import { bodyKind, parseBody, queryObject, readBody, REQUEST_ABORTED, triggerHeaders } from './webhook-payload.js';

/** Path prefix of the webhook route. */
export const WEBHOOK_PATH_PREFIX = '/api/hooks/workflows/';

/** What the handler needs; `stores()` is undefined until the buckets were opened. */
export interface WebhookDeps {
  config: GatewayConfig;
  workflows: KvCache<WorkflowRecord>;
  workspaces: KvCache<WorkspaceRecord>;
  /** The job publisher (the gateway passes a {@link PublishBatcher} over its JobPublisher). */
  publisher: Publisher;
  stores: () => { idempotency: KV; signatures: KV } | undefined;
  /** The per-workflow rate, shared by the gateways (cluster-rate-limiter.ts). */
  limiter: Pick<ClusterRateLimiter, 'take'>;
  log: Logger;
  /** Observes the time from the start of the publish to its answer, in seconds. */
  observeEnqueue?: (seconds: number, outcome: string) => void;
  now?: () => Date;
  /** Random bytes for execution ids (default crypto.randomBytes; the gateway passes a pooled CSPRNG source). */
  random?: RandomBytes;
}

/** The request target split at the first `?` (no URL parser: `//host` paths must not become hosts). */
export interface WebhookUrl {
  pathname: string;
  /** From the `?` on, or empty. */
  search: string;
}

/** Splits a request target into path and query. */
export function splitTarget(target: string): WebhookUrl {
  const q = target.indexOf('?');
  return q < 0 ? { pathname: target, search: '' } : { pathname: target.slice(0, q), search: target.slice(q) };
}

/** What the handler did, for the access log and metrics. */
export interface WebhookOutcome {
  status: number;
  code?: string;
  workflowId?: string;
  executionId?: string;
  /** True when the body was not (fully) read: the connection must not be reused. */
  bodyUnread: boolean;
}

/** How much of an unread body (× LDBOX_MAX_BODY_BYTES) is read and dropped so that the client sees the answer. */
export const DISCARD_FACTOR = 4;

const IDEMPOTENCY_KEY = /^[\x21-\x7e][\x20-\x7e]{0,254}$/;
/** Longest challenge or validation token a handshake echoes. */
const MAX_HANDSHAKE_CHARS = 1024;
const RETRY_UNAVAILABLE_S = '5';
const RETRY_FULL_S = '30';

/** Handles one request on the webhook route; never throws. */
export async function handleWebhook(req: IncomingMessage, res: ServerResponse, url: WebhookUrl, deps: WebhookDeps): Promise<WebhookOutcome> {
  const outcome: WebhookOutcome = { status: 0, bodyUnread: true };
  try {
    await run(req, res, url, deps, outcome);
  } catch (err) {
    if (!(err instanceof WebhookError) && isClientAbort(req, err)) {
      // The client went away mid-body: nothing to answer, nothing wrong here (no stack).
      deps.log.info({ workflowId: outcome.workflowId, reason: (err as Error).message }, 'webhook request aborted by the client');
      outcome.status = 499;
      outcome.code = 'client_aborted';
      res.destroy();
      return outcome;
    }
    const e =
      err instanceof WebhookError
        ? err
        : (deps.log.error({ err, workflowId: outcome.workflowId }, 'webhook failed'),
          new WebhookError('internal_error', 'internal error while processing the webhook'));
    outcome.status = e.status;
    outcome.code = e.code;
    if (res.headersSent) {
      res.destroy();
      return outcome;
    }
    if (outcome.bodyUnread && bodyMayBeLarge(req, deps.config.maxBodyBytes)) {
      // The rest of the body is read and dropped (up to DISCARD_FACTOR × the limit) before the answer, so
      // clients that send the whole body before reading (Node's fetch) see the status, not EPIPE.
      await answerAfterDiscard(req, res, DISCARD_FACTOR * deps.config.maxBodyBytes, () => sendError(res, e));
    } else {
      sendError(res, e);
    }
  }
  return outcome;
}

async function run(req: IncomingMessage, res: ServerResponse, url: WebhookUrl, deps: WebhookDeps, outcome: WebhookOutcome): Promise<void> {
  if (req.method !== 'POST' && req.method !== 'GET') throw notAllowed(req);
  const id = url.pathname.slice(WEBHOOK_PATH_PREFIX.length);
  if (!isWorkflowId(id)) {
    throw new WebhookError('invalid_workflow_id', `"${truncate(id)}" is not a workflow id (wf_ and 20 characters of 0-9 a-z)`);
  }
  outcome.workflowId = id;
  if (!deps.workflows.ready) throw new WebhookError('not_ready', 'the gateway is starting: workflows are not loaded yet', { 'retry-after': '1' });
  const workflow = deps.workflows.get(id);
  if (!workflow) throw new WebhookError('workflow_not_found', `workflow ${id} does not exist`);
  const params = url.search === '' ? undefined : new URLSearchParams(url.search);
  if (req.method === 'GET') {
    if (!params?.has('hub.mode')) throw notAllowed(req);
    outcome.bodyUnread = false; // a GET has no body to read
    return answerText(res, outcome, metaChallenge(params, workflow));
  }
  if (params?.has('validationToken')) {
    // Microsoft Graph's subscription validation: echo the token, start nothing.
    const token = handshakeParameter(params, 'validationToken');
    await readBody(req, deps.config.maxBodyBytes);
    outcome.bodyUnread = false;
    return answerText(res, outcome, token);
  }

  const now = deps.now?.() ?? new Date();
  const auth = workflow.webhook.auth;
  const signing = auth.method === 'signature' ? auth.signing : undefined;
  const headers: HeaderReader = (name) => (req.headers[name] === undefined ? undefined : req.headersDistinct[name]);
  let payload: Payload | undefined;
  let replayKey: string | undefined;
  if (auth.method === 'signature') {
    if (!signing || signing.secret === '') {
      // Sealed with a data key this gateway does not have (the cache logged which): never check against ''.
      throw new WebhookError('internal_error', "the webhook's signing secret cannot be opened with the configured data keys");
    }
    payload = await readPayload(req, deps, outcome);
    const check = verifySignature(
      signing.preset,
      signingSecrets(auth, now)!,
      { headers, body: payload.raw },
      { now, toleranceMs: deps.config.signatureToleranceMs, scope: id },
    );
    if (!check.ok) throw new WebhookError(check.code, check.message);
    replayKey = check.replayKey;
    const challenge = signing.preset === 'slack' ? slackChallenge(payload.body) : undefined;
    if (challenge !== undefined) {
      outcome.status = 200;
      sendJson(res, 200, { challenge });
      return;
    }
  } else {
    const secretHeader = req.headers['x-webhook-secret'];
    const result = authenticateWebhookRequest(
      auth,
      {
        header: Array.isArray(secretHeader) ? secretHeader.join(',') : secretHeader,
        query: params === undefined ? [] : params.getAll(WEBHOOK_SECRET_QUERY_PARAMETER),
      },
      now,
    );
    if (!result.ok) throw new WebhookError(result.reason === 'missing' ? 'missing_secret' : 'invalid_secret', result.message);
  }

  const capRetry = spendingCapRetryAfter(deps.workspaces.get(workflow.workspace), now);
  if (capRetry !== undefined) {
    throw new WebhookError(
      'spending_cap_reached',
      `workspace ${workflow.workspace} has spent its monthly budget: webhooks are refused until the next month (UTC)`,
      {
        'retry-after': String(capRetry),
      },
    );
  }
  const rate = workflow.rateLimitPerSecond > 0 ? workflow.rateLimitPerSecond : deps.config.webhookRate;
  const taken = deps.limiter.take(id, rate, workflow.overRate === 'throttle');
  const admission = taken instanceof Promise ? await taken : taken;
  if (!admission.ok) {
    const message =
      admission.reason === 'throttle_full'
        ? `workflow ${id} runs ${rate} webhooks per second and has more waiting than it can start within the throttle window`
        : `workflow ${id} is limited to ${rate} requests per second`;
    throw new WebhookError('rate_limited', message, { 'retry-after': String(admission.retryAfterS) });
  }

  payload ??= await readPayload(req, deps, outcome);
  const job: WebhookJob = {
    v: 1,
    executionId: '',
    workflowId: id,
    workspace: workflow.workspace,
    receivedAt: now.toISOString(),
    trigger: { body: payload.body, query: queryObject(url.search), headers: triggerHeaders(req), method: req.method },
  };
  // Over a throttling workflow's rate: stored now, run at its slot's time (the header is what the executor reads).
  const throttled = admission.notBefore === undefined ? undefined : { [NOT_BEFORE_HEADER]: String(admission.notBefore) };
  if (admission.notBefore !== undefined) job.notBefore = new Date(admission.notBefore).toISOString();

  const key = idempotencyKey(req) ?? deliveryKey(signing, headers, payload.body);
  let executionId = deps.random ? newExecutionId(now, deps.random) : newExecutionId(now);
  let claimRevision: number | undefined;
  let firstClaim = false;
  let replayClaim: ReplayClaim | undefined;
  const stores = deps.stores();
  const unavailable = () => new WebhookError('queue_unavailable', 'NATS is not reachable: the webhook was not queued', { 'retry-after': RETRY_UNAVAILABLE_S });
  if (key !== undefined) {
    if (!stores) throw unavailable();
    const claim = await claimUntilAnswered(stores.idempotency, id, key, executionId, deps.config.publishTimeoutMs);
    if (!claim.ok) throw unavailable();
    if (!claim.first && claim.state === 'queued') {
      // A retry of a request whose job is stored: same answer, nothing published.
      outcome.executionId = claim.executionId;
      accept(res, claim.executionId, outcome);
      return;
    }
    if (!claim.first) executionId = claim.executionId; // the first request may have stored it: same msgID de-duplicates
    firstClaim = claim.first;
    claimRevision = claim.revision;
  }
  if (replayKey !== undefined) {
    if (!stores) throw unavailable();
    const claim = await claimSignature(stores.signatures, replayKey);
    if (claim.outcome !== 'first') {
      await release();
      if (claim.outcome === 'unavailable') throw unavailable();
      throw new WebhookError(
        'replayed_signature',
        'replayed signature: a call with this signature was already accepted; the sender must sign each delivery anew',
      );
    }
    replayClaim = claim;
  }
  job.executionId = executionId;
  outcome.executionId = executionId;

  const data = Buffer.from(JSON.stringify(job), 'utf8');
  if (data.length > maxJobBytes(deps.config.maxBodyBytes)) {
    await release();
    throw new WebhookError(
      'payload_too_large',
      `the webhook's body, query and headers make a job of ${data.length} bytes, over the limit of ${maxJobBytes(deps.config.maxBodyBytes)} bytes`,
    );
  }
  const t0 = performance.now();
  const pub = await deps.publisher.publish(jobSubject(id, executionId), data, {
    msgID: executionId,
    expectStream: JOBS_STREAM,
    ...(throttled ? { headers: throttled } : {}),
  });
  deps.observeEnqueue?.((performance.now() - t0) / 1000, pub.ok ? 'ok' : pub.error);
  if (!pub.ok) {
    deps.log.warn({ workflowId: id, executionId, error: pub.error, reason: pub.message }, 'webhook job not queued');
    await release();
    throw publishError(pub);
  }
  if (key !== undefined && stores && claimRevision !== undefined) {
    await confirmIdempotencyKey(stores.idempotency, id, key, executionId, claimRevision);
  }
  accept(res, executionId, outcome);

  async function release(): Promise<void> {
    if (firstClaim && key !== undefined && stores && claimRevision !== undefined) {
      await releaseIdempotencyKey(stores.idempotency, id, key, claimRevision);
    }
    if (replayClaim && stores) await releaseSignature(stores.signatures, replayClaim);
  }
}

/** A read and parsed body. */
interface Payload {
  raw: Buffer;
  body: WebhookJob['trigger']['body'];
}

/** Content-Type, size limit, then the parse (webhook-payload.ts). */
async function readPayload(req: IncomingMessage, deps: WebhookDeps, outcome: WebhookOutcome): Promise<Payload> {
  const kind = bodyKind(req.headers['content-type']);
  const raw = await readBody(req, deps.config.maxBodyBytes);
  outcome.bodyUnread = false;
  return { raw, body: parseBody(raw, kind) };
}

function notAllowed(req: IncomingMessage): WebhookError {
  return new WebhookError('method_not_allowed', `method ${req.method ?? ''} is not allowed: webhooks accept POST`, { allow: 'POST' });
}

/** The one value of a handshake's query parameter, 1 to MAX_HANDSHAKE_CHARS characters; throws `invalid_handshake`. */
function handshakeParameter(params: URLSearchParams, name: string): string {
  const values = params.getAll(name);
  if (values.length !== 1 || values[0] === '' || values[0]!.length > MAX_HANDSHAKE_CHARS) {
    throw new WebhookError('invalid_handshake', `the handshake needs one "${name}" query parameter of 1 to ${MAX_HANDSHAKE_CHARS} characters`);
  }
  return values[0]!;
}

/** Meta's subscription handshake: the challenge to answer, when the verify token is the webhook's. */
function metaChallenge(params: URLSearchParams, workflow: WorkflowRecord): string {
  const mode = handshakeParameter(params, 'hub.mode');
  if (mode !== 'subscribe') throw new WebhookError('invalid_handshake', `hub.mode must be "subscribe"`);
  const challenge = handshakeParameter(params, 'hub.challenge');
  const tokens = params.getAll('hub.verify_token');
  if (workflow.webhook.auth.verifyTokenHash === undefined) {
    throw new WebhookError('invalid_verify_token', 'the webhook has no verify token: set verifyToken with SetWebhookAuthMethod');
  }
  if (tokens.length !== 1 || !verifyTokenMatches(workflow.webhook.auth, tokens[0]!)) {
    throw new WebhookError('invalid_verify_token', "hub.verify_token is not the webhook's verify token");
  }
  return challenge;
}

/** The `challenge` of a Slack `url_verification` body; undefined for any other body. */
function slackChallenge(body: Payload['body']): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const challenge = Object.hasOwn(body, 'challenge') ? body.challenge : undefined;
  return body.type === 'url_verification' && typeof challenge === 'string' ? challenge : undefined;
}

/** The delivery id as an idempotency key, for a signature webhook that de-duplicates deliveries. */
function deliveryKey(signing: WebhookSigning | undefined, headers: HeaderReader, body: Payload['body']): string | undefined {
  return signing?.deduplicate ? deliveryId(signing.preset, headers, body) : undefined;
}

/** 200 with `text` as `text/plain` (never sniffed as HTML: the text is the caller's). */
function answerText(res: ServerResponse, outcome: WebhookOutcome, text: string): void {
  const data = Buffer.from(text, 'utf8');
  outcome.status = 200;
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(data.length), 'x-content-type-options': 'nosniff' });
  res.end(data);
}

/**
 * The `Idempotency-Key` claim, tried again while the idempotency bucket cannot answer (its stream electing
 * a leader after a NATS node died), within the publish timeout: as with the job's publish, a lost node is
 * waited out rather than answered 503. A claim whose answer was lost is found again as ours by the retry.
 */
async function claimUntilAnswered(kv: KV, workflowId: string, key: string, executionId: string, timeoutMs: number): Promise<ClaimResult> {
  const deadline = performance.now() + timeoutMs;
  for (let n = 0; ; n++) {
    const claim = await claimIdempotencyKey(kv, workflowId, key, executionId);
    if (claim.ok || performance.now() + retryPauseMs(n) >= deadline) return claim;
    await new Promise((resolve) => setTimeout(resolve, retryPauseMs(n)));
  }
}

function accept(res: ServerResponse, executionId: string, outcome: WebhookOutcome): void {
  outcome.status = 202;
  sendJson(res, 202, { executionId });
}

function publishError(pub: PublishFailure): WebhookError {
  switch (pub.error) {
    case 'unavailable':
      return new WebhookError('queue_unavailable', 'NATS is not reachable: the webhook was not queued', { 'retry-after': RETRY_UNAVAILABLE_S });
    case 'full':
      return new WebhookError('queue_full', 'the job queue is full: the webhook was not queued', { 'retry-after': RETRY_FULL_S });
    case 'too_large':
      return new WebhookError('payload_too_large', `the job is too large for the queue: ${pub.message}`);
    case 'rejected':
      return new WebhookError('internal_error', 'the job queue refused the webhook');
  }
}

function idempotencyKey(req: IncomingMessage): string | undefined {
  if (req.headers['idempotency-key'] === undefined) return undefined; // (headersDistinct is built on first use: skip it when absent)
  const raw = req.headersDistinct['idempotency-key'];
  if (raw === undefined) return undefined;
  if (raw.length !== 1 || !IDEMPOTENCY_KEY.test(raw[0]!)) {
    throw new WebhookError('invalid_idempotency_key', 'Idempotency-Key must be sent once, with 1 to 255 printable ASCII characters');
  }
  return raw[0]!;
}

function bodyMayBeLarge(req: IncomingMessage, limit: number): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = Number(req.headers['content-length'] ?? 0);
  return !(length <= limit);
}

/** True when `err` is the client aborting the request (reset, closed mid-body), not a fault of ours. */
function isClientAbort(req: IncomingMessage, err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ECONNRESET' || code === 'ECONNABORTED' || (err as Error | undefined)?.message === REQUEST_ABORTED || (req.destroyed && !req.complete);
}

function truncate(s: string): string {
  return s.length > 64 ? `${s.slice(0, 64)}…` : s;
}
