/**
 * The one table of the webhook route's answers that are not 202 (spec: "Errors"; docs/design.md: response
 * bodies are `{"error": {"code": "...", "message": "..."}}`). Tests assert `code` and status; the message
 * is for people and never contains a secret.
 */
import type { ServerResponse } from 'node:http';
import { sendJson } from '../src/http/send-json.js';

/** The JSON writer of every gateway answer (src/http/send-json.ts). */
export { sendJson };

export const WEBHOOK_ERRORS = {
  /** The path's workflow id is not `wf_` + 20 base32 characters (checked before any lookup). */
  invalid_workflow_id: 400,
  /** The active method's secret (header or query) was not sent. */
  missing_secret: 400,
  /** The secret does not match (or was sent more than once). */
  invalid_secret: 400,
  /** Content-Type is not JSON (`application/json`, `application/*+json`, none) or a form. */
  unsupported_content_type: 400,
  /** The body is not valid JSON (or not UTF-8). */
  invalid_json: 400,
  /** The body is JSON but neither an object nor an array. */
  body_not_object: 400,
  /** AUTH_METHOD_SIGNATURE: the preset's signature header(s) were not sent. */
  missing_signature: 400,
  /** AUTH_METHOD_SIGNATURE: the signature is malformed, sent twice, or does not match the body and secret. */
  bad_signature: 400,
  /** AUTH_METHOD_SIGNATURE: the signed timestamp is further from now than LDBOX_SIGNATURE_TOLERANCE. */
  stale_signature: 400,
  /** AUTH_METHOD_SIGNATURE: this signed call was already accepted (a replay within the tolerance). */
  replayed_signature: 400,
  /** Meta's subscription handshake with a verify token that is not the webhook's (or the webhook has none). */
  invalid_verify_token: 400,
  /** A handshake query parameter (`hub.challenge`, `validationToken`) is missing, repeated or too long. */
  invalid_handshake: 400,
  /** The JSON body nests objects/arrays deeper than MAX_BODY_DEPTH (webhook-payload.ts; checked before parsing). */
  body_too_deep: 400,
  /** `Idempotency-Key` is empty, longer than 255 characters, or sent twice. */
  invalid_idempotency_key: 400,
  /** No workflow has this id. */
  workflow_not_found: 404,
  /** No route for the path. */
  not_found: 404,
  /** The webhook accepts POST only (`Allow: POST`). */
  method_not_allowed: 405,
  /** The body (or the job made of it) is over the limit; answered without reading the whole body. */
  payload_too_large: 413,
  /** The workflow's token bucket is empty; `Retry-After` says when a request will be accepted. */
  rate_limited: 429,
  /** The workspace spent its monthly budget; `Retry-After` runs to the start of the next month (UTC). */
  spending_cap_reached: 429,
  /** The job stream refused the job for a reason other than load (a misconfiguration). */
  internal_error: 500,
  /** NATS is not reachable or did not acknowledge in time: the job is not known to be stored. */
  queue_unavailable: 503,
  /** The job stream is at its limits and refuses new jobs. */
  queue_full: 503,
  /** The gateway has not loaded the workflows yet (just started, NATS not reached yet). */
  not_ready: 503,
} as const satisfies Record<string, number>;

export type WebhookErrorCode = keyof typeof WEBHOOK_ERRORS;

/** A webhook refusal: the code (its status comes from the table), a message, extra headers. */
export class WebhookError extends Error {
  override readonly name = 'WebhookError';
  readonly status: number;
  constructor(
    readonly code: WebhookErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = WEBHOOK_ERRORS[code];
  }
}

export function sendError(res: ServerResponse, err: WebhookError): void {
  sendJson(res, err.status, { error: { code: err.code, message: err.message } }, err.headers);
}
