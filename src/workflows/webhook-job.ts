/**
 * The message the gateway puts on the JOBS stream for one accepted webhook call (subject
 * `ldbox.jobs.<workflowId>`, `Nats-Msg-Id` = the execution id), and the executor's check of it.
 *
 * The check is strict because a job is input from the queue, not from this process: anything that is not
 * exactly this shape is refused with a message saying what is wrong, never half-run.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { isExecutionId, isWorkflowId } from './ids.js';

/**
 * `trigger.output` of an execution: the parsed body (an object or array, a form as an object, the text of a
 * `text/plain` body; `{}` when empty), the query without `secret`, the headers without credentials (lower-case
 * names, repeated ones joined with ", ") and the method. Jobs from before headers were kept have neither
 * `headers` nor `method`.
 */
export interface WebhookTrigger {
  body: JsonValue;
  query: JsonObject;
  headers?: Record<string, string>;
  method?: string;
}

export interface WebhookJob {
  /** Format version. */
  v: 1;
  executionId: string;
  workflowId: string;
  workspace: string;
  /** ISO-8601: when the gateway accepted the call (the execution's `createdAt`). */
  receivedAt: string;
  /** `trigger.output` (see {@link WebhookTrigger}). */
  trigger: WebhookTrigger;
  /**
   * ISO-8601, set when the call came over a throttling workflow's rate: the execution starts no earlier
   * (the executor waits for it with the job's `Ldbox-Not-Before` header, src/nats/job-consumer.ts).
   */
  notBefore?: string;
  /** Set on the job of a ReplayExecution: the id of the execution replayed (recorded as `replayOf`). */
  replayOf?: string;
}

/** A job that cannot be read; `ids` holds what could be read of it, for recording the failure. */
export class MalformedJobError extends Error {
  override readonly name = 'MalformedJobError';
  constructor(
    message: string,
    readonly ids: { workflowId?: string; executionId?: string },
  ) {
    super(message);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses and checks a job's bytes; throws {@link MalformedJobError}. */
export function parseWebhookJob(data: Uint8Array): WebhookJob {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  } catch {
    throw new MalformedJobError(`the job is not JSON (${data.byteLength} bytes)`, {});
  }
  if (!isObject(raw)) throw new MalformedJobError('the job is not a JSON object', {});
  const ids = {
    workflowId: typeof raw.workflowId === 'string' && isWorkflowId(raw.workflowId) ? raw.workflowId : undefined,
    executionId: typeof raw.executionId === 'string' && isExecutionId(raw.executionId) ? raw.executionId : undefined,
  };
  const fail = (what: string): never => {
    throw new MalformedJobError(`the job is malformed: ${what}`, ids);
  };
  if (raw.v !== 1) fail(`unknown format version ${JSON.stringify(raw.v)}`);
  if (!ids.workflowId) fail('workflowId is not a workflow id');
  if (!ids.executionId) fail('executionId is not an execution id');
  if (typeof raw.workspace !== 'string' || raw.workspace === '') fail('workspace is missing');
  if (typeof raw.receivedAt !== 'string' || Number.isNaN(Date.parse(raw.receivedAt))) fail('receivedAt is not a time');
  const trigger = raw.trigger;
  if (!isObject(trigger) || !isObject(trigger.query)) fail('trigger and trigger.query must be objects');
  const t = trigger as Record<string, unknown>;
  if (!isObject(t.body) && !Array.isArray(t.body) && typeof t.body !== 'string') fail('trigger.body must be an object, an array or a string');
  if (t.headers !== undefined && (!isObject(t.headers) || Object.values(t.headers).some((v) => typeof v !== 'string'))) {
    fail('trigger.headers must be an object of strings');
  }
  if (t.method !== undefined && typeof t.method !== 'string') fail('trigger.method must be a string');
  if (raw.replayOf !== undefined && (typeof raw.replayOf !== 'string' || !isExecutionId(raw.replayOf))) fail('replayOf is not an execution id');
  return raw as unknown as WebhookJob;
}
