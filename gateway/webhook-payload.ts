/**
 * Reading and parsing a webhook request's payload (docs/design.md "body formats", "repeated query parameter").
 *
 * - Query: every parameter except `secret` (never passed on, whatever the method); a repeated name is an
 *   array of its values in order. Objects have no prototype, so `__proto__=x` is just a key.
 * - Body by Content-Type (media type, case-insensitive, parameters ignored): `application/json`,
 *   `application/*+json` and none → JSON, which must be an object or an array (SendGrid posts arrays);
 *   `application/x-www-form-urlencoded` → an object like the query; `text/plain` → the text as a string;
 *   anything else → 400. An empty body is `{}`. Bodies must be UTF-8.
 * - Headers (`trigger.output.headers`): lower-case names, a repeated header's values joined with ", ",
 *   without those that carry credentials ({@link HIDDEN_HEADERS}).
 * - Depth: a JSON body may nest objects and arrays at most {@link MAX_BODY_DEPTH} levels (the body object
 *   is level 1); deeper is 400 `body_too_deep`, found by a scan of the text before `JSON.parse`, so no
 *   depth can overflow a stack here or later (templates, the runner's protobuf Struct, records). Forms
 *   and queries are flat (a value or an array of values).
 * - Size: a `Content-Length` over the limit is refused before reading; a chunked body is refused as soon
 *   as it passes the limit (the rest is not read: the connection is closed after the answer).
 */
import type { IncomingMessage } from 'node:http';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { WEBHOOK_SECRET_QUERY_PARAMETER } from '../src/workflows/webhook-secret.js';
import { SIGNATURE_HEADERS } from '../src/workflows/webhook-signature.js';
import { jsonShape } from '../src/json/json-shape.js';
import { WebhookError } from './webhook-errors.js';

export type BodyKind = 'json' | 'form' | 'text';

/**
 * Headers never passed on to a node: credentials of any kind (`authorization`, `proxy-authorization`,
 * `cookie`, the `x-webhook-secret` of the Header method) and the signature header of every preset.
 */
export const HIDDEN_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-webhook-secret', ...SIGNATURE_HEADERS]);

/** `trigger.output.headers`: the request's headers by lower-case name, without {@link HIDDEN_HEADERS}. */
export function triggerHeaders(req: Pick<IncomingMessage, 'headersDistinct'>): Record<string, string> {
  const out: Record<string, string> = {};
  const all = req.headersDistinct;
  for (const name of Object.keys(all)) {
    // `__proto__` is a valid header token but would be a prototype here and in the proto map.
    if (HIDDEN_HEADERS.has(name) || name === '__proto__') continue;
    const values = all[name];
    if (values !== undefined) out[name] = values.join(', ');
  }
  return out;
}

/** Parameters as an object: one entry per name, an array when repeated. `omit` names are dropped. */
export function paramsToObject(params: URLSearchParams, omit?: string): JsonObject {
  const out: Record<string, JsonValue> = Object.create(null) as Record<string, JsonValue>;
  for (const [k, v] of params) {
    if (k === omit) continue;
    const prev = out[k];
    if (prev === undefined) out[k] = v;
    else if (Array.isArray(prev)) prev.push(v);
    else out[k] = [prev, v];
  }
  return out as JsonObject;
}

/** `trigger.output.query`: the URL's parameters without `secret`. */
export function queryObject(search: string): JsonObject {
  return paramsToObject(new URLSearchParams(search), WEBHOOK_SECRET_QUERY_PARAMETER);
}

const JSON_SUFFIX = /^application\/[a-z0-9!#$&^_.-]+\+json$/;

/** How the body is parsed, from the Content-Type; throws `unsupported_content_type`. */
export function bodyKind(contentType: string | undefined): BodyKind {
  if (contentType === undefined || contentType.trim() === '') return 'json';
  const media = contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (media === 'application/json' || JSON_SUFFIX.test(media)) return 'json';
  if (media === 'application/x-www-form-urlencoded') return 'form';
  if (media === 'text/plain') return 'text';
  throw new WebhookError(
    'unsupported_content_type',
    `unsupported Content-Type "${media}": send JSON (application/json), a form (application/x-www-form-urlencoded) or text (text/plain)`,
  );
}

/** The message a body read rejects with when the client aborts. */
export const REQUEST_ABORTED = 'request aborted by the client';

/**
 * Reads the body up to `limit` bytes. Throws `payload_too_large` as soon as the declared or received
 * length passes it (without reading the rest). Rejects with the stream's error when the client aborts.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    return Promise.reject(tooLarge(Number(declared), limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(tooLarge(undefined, limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const onAborted = () => onError(new Error(REQUEST_ABORTED));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

function tooLarge(declared: number | undefined, limit: number): WebhookError {
  return new WebhookError(
    'payload_too_large',
    declared === undefined ? `request body is over the limit of ${limit} bytes` : `request body of ${declared} bytes is over the limit of ${limit} bytes`,
  );
}

/**
 * The deepest nesting of a webhook's JSON body (the body object is level 1). It is well under every limit
 * on the body's path: the body becomes a node's `input` inside a protobuf Struct (one more level, more
 * when a template places it deeper) and may come back in a result, which the runner caps at 32 levels
 * (runner/results MAX_RESULT_DEPTH); the executor refuses inputs deeper than 32 (MAX_INPUT_DEPTH).
 */
export const MAX_BODY_DEPTH = 24;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `trigger.output.body` from the raw bytes; throws `invalid_json` or `body_not_object`. */
export function parseBody(raw: Buffer, kind: BodyKind): JsonObject | JsonValue[] | string {
  if (raw.length === 0) return {};
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new WebhookError('invalid_json', 'request body is not valid UTF-8');
  }
  if (kind === 'form') return paramsToObject(new URLSearchParams(text));
  if (kind === 'text') return text;
  // Before parsing: JSON.parse of a deep enough text throws a RangeError (a 500), and a depth it does
  // take would break later steps (templates, protobuf, records) for good.
  const depth = jsonShape(text, MAX_BODY_DEPTH).depth;
  if (depth > MAX_BODY_DEPTH) {
    throw new WebhookError(
      'body_too_deep',
      `request body nests objects/arrays more than ${MAX_BODY_DEPTH} levels deep: flatten it or send deep parts as JSON strings`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new WebhookError('invalid_json', `request body is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object') {
    const what = value === null ? 'null' : `a ${typeof value}`;
    throw new WebhookError('body_not_object', `request body must be a JSON object or array, got ${what}: send text as text/plain`);
  }
  return value as JsonObject | JsonValue[];
}

/**
 * The URL for logs: the path and the query with the value of every parameter that decodes to `secret`
 * (also `s%65cret`) replaced by `[REDACTED]`.
 */
export function scrubUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const parts = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq < 0 ? pair : pair.slice(0, eq);
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        name = rawName;
      }
      return name.trim().toLowerCase() === WEBHOOK_SECRET_QUERY_PARAMETER ? `${rawName}=[REDACTED]` : pair;
    });
  return `${url.slice(0, q)}?${parts.join('&')}`;
}
