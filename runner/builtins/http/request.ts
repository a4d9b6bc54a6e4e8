import { type AsyncBuiltin, GuestFacingError } from '../guest-boundary.js';
import { appendValue, describe, encodeBody } from './request-body.js';
import { HTTP_METHODS, type HttpMethod, type PreparedRequest, RESPONSE_TYPES, type ResponseType, sendRequest } from './send-request.js';

/**
 * `ld.request(options)` (spec "Sandbox functions" → "ld.request(options)"): an HTTP request to an
 * external API. Options are checked here with exact TypeError messages, the body is encoded
 * (request-body.ts), and send-request.ts does the guarded send. Every failure is a rejection of the
 * returned promise, never a synchronous throw, so `ld.request(o).catch(...)` sees them all.
 * Tests: test/builtins/http/.
 */
export const request: AsyncBuiltin = async (args, ctx) => {
  const { prepared, responseType, timeoutMs } = await prepareRequest(args[0]);
  return sendRequest(prepared, { responseType, timeoutMs }, ctx);
};

export interface RequestOptions {
  prepared: PreparedRequest;
  responseType: ResponseType;
  timeoutMs: number | undefined;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Hop-by-hop headers: the HTTP client manages the connection, so these are not the caller's to set. */
const TRANSPORT_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'te', 'content-length', 'host', 'trailer']);
/** Like the axios defaults integration code was written against; each can be overridden. */
const DEFAULT_HEADERS: Readonly<Record<string, string>> = {
  accept: 'application/json, text/plain, */*',
  'accept-encoding': 'gzip, deflate, br',
  'user-agent': 'ldbox',
};

function fail(message: string): never {
  throw new GuestFacingError('TypeError', `ld.request: ${message}`);
}

/** Checks the guest's options and turns them into a request for the HTTP core. */
export async function prepareRequest(options: unknown): Promise<RequestOptions> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new GuestFacingError('TypeError', `ld.request takes an options object { method, url, ... }, got ${describe(options)}`);
  }
  const o = options as Record<string, unknown>;
  const method = readMethod(o['method']);
  const url = readUrl(o['url']);
  const headers = readHeaders(o['headers']);
  const responseType = readResponseType(o['responseType']);
  const timeoutMs = readTimeout(o['timeout']);

  const params = o['params'];
  if (params !== undefined && params !== null) {
    if (typeof params !== 'object' || Array.isArray(params)) fail(`params must be an object, got ${describe(params)}`);
    const extra = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) appendValue(extra, k, v);
    const query = extra.toString();
    // Appended to the URL's own query as it is, so an existing query is not re-encoded.
    if (query !== '') url.search = url.search.length > 1 ? `${url.search}&${query}` : `?${query}`;
  }

  // http://user:pass@host/ means Basic auth; the credentials never stay in the URL.
  if (url.username !== '' || url.password !== '') {
    if (headers['authorization'] === undefined) {
      const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      headers['authorization'] = `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
    }
    url.username = '';
    url.password = '';
  }

  const encoded = await encodeBody(o['body'], headers['content-type']);
  if (encoded.contentType !== undefined && (encoded.replaceContentType || headers['content-type'] === undefined)) {
    headers['content-type'] = encoded.contentType;
  }
  const all = Object.assign(Object.create(null) as Record<string, string>, DEFAULT_HEADERS, headers);
  return { prepared: { method, url, headers: all, body: encoded.body }, responseType, timeoutMs };
}

function readMethod(v: unknown): HttpMethod {
  if (v === undefined || v === null) fail('method is required (GET, POST, PUT, PATCH or DELETE)');
  const upper = typeof v === 'string' ? v.toUpperCase() : undefined;
  if (upper === undefined || !(HTTP_METHODS as readonly string[]).includes(upper)) {
    fail(`method must be GET, POST, PUT, PATCH or DELETE, got ${describe(v)}`);
  }
  return upper as HttpMethod;
}

function readUrl(v: unknown): URL {
  if (typeof v !== 'string') fail(`url must be a string, got ${describe(v)}`);
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    // Shown without its query and fragment: secrets often live there.
    fail(`url must be an absolute URL such as https://api.example.com/items, got ${describe(v.replace(/[?#][\s\S]*$/, ''))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`url must be http: or https:, got ${describe(url.protocol)}`);
  return url;
}

/** Header names in lower case (a later spelling of the same name wins); numbers and booleans become strings. */
function readHeaders(v: unknown): Record<string, string> {
  // No prototype: a header named __proto__ stays a header.
  const out = Object.create(null) as Record<string, string>;
  if (v === undefined || v === null) return out;
  if (typeof v !== 'object' || Array.isArray(v) || v instanceof Uint8Array) fail(`headers must be an object, got ${describe(v)}`);
  for (const [name, value] of Object.entries(v)) {
    if (!TOKEN.test(name)) fail(`${describe(name)} is not a valid header name`);
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      fail(`the value of header "${name}" must be a string, got ${describe(value)}`);
    }
    const text = String(value);
    if (/[\r\n\0]/.test(text)) fail(`the value of header "${name}" must not contain line breaks or NUL`);
    const lower = name.toLowerCase();
    if (!TRANSPORT_HEADERS.has(lower)) out[lower] = text;
  }
  return out;
}

function readResponseType(v: unknown): ResponseType {
  if (v === undefined || v === null) return 'json';
  if (typeof v !== 'string' || !(RESPONSE_TYPES as readonly string[]).includes(v)) {
    fail(`responseType must be json, text, stream or binary, got ${describe(v)}`);
  }
  return v as ResponseType;
}

/** Milliseconds; 0 (axios's default) means no limit of its own, the call's deadline still applies. */
function readTimeout(v: unknown): number | undefined {
  if (v === undefined || v === null || v === 0) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) fail(`timeout must be a positive number of milliseconds, got ${describe(v)}`);
  return v;
}
