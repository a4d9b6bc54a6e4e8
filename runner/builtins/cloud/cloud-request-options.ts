import { GuestFacingError, GuestFormData } from '../guest-boundary.js';
import { normalizeRequestUrl, SigV4InputError, type SigV4Credentials } from './sigv4-signer.js';

/**
 * The options of `ld.cloudRequest(options)` / `ld.awsRequest(options)` (spec "ld.cloudRequest(options)"),
 * checked once, with an exact TypeError per rule (test/builtins/cloud/cloud-request.test.ts). Method,
 * headers, responseType and timeout follow ld.request's rules. Messages never show a credential, a URL
 * (URLs often carry keys) or a header value: only names and the kind of value found.
 */

export const CLOUD_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type CloudMethod = (typeof CLOUD_METHODS)[number];
export const CLOUD_RESPONSE_TYPES = ['json', 'text', 'stream', 'binary'] as const;
export type CloudResponseType = (typeof CLOUD_RESPONSE_TYPES)[number];

export interface CloudRequestOptions {
  method: CloudMethod;
  url: string;
  /** Lower-case names (a later spelling of a name wins), values as strings. */
  headers: Record<string, string>;
  /** The exact bytes (or UTF-8 text) to sign and send. */
  body: string | Uint8Array | undefined;
  region: string;
  service: string;
  credentials: SigV4Credentials;
  /** `json` unless given, as in ld.request. */
  responseType: CloudResponseType;
  /** Undefined: no limit of its own (the call's deadline still applies). */
  timeoutMs: number | undefined;
}

const NAME = 'ld.cloudRequest';
const OPTION_NAMES = ['method', 'url', 'headers', 'body', 'region', 'service', 'credentials', 'responseType', 'timeout'];
/** RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/**
 * Visible ASCII, space and tab. Stricter than ld.request: a signed header's value is hashed as UTF-8 but
 * sent as Latin-1 bytes, so anything beyond ASCII would break the signature.
 */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;
/** Hop-by-hop and framing headers belong to the HTTP client (as in ld.request); host comes from the URL. */
const TRANSPORT_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'te', 'content-length', 'host', 'trailer']);
/** Region and service are parts of the credential scope, which `/` separates. */
const SCOPE_PART = /^[A-Za-z0-9._-]+$/;
/** The access key id is written into the Authorization header, between `Credential=` and `/`. */
const ACCESS_KEY_ID = /^[\x21-\x2b\x2d\x2e\x30-\x7e]+$/;
/** The session token is sent as a header value. */
const SESSION_TOKEN = /^[\x21-\x7e]+$/;
const FORM_URLENCODED = 'application/x-www-form-urlencoded';

/** Checks the built-in's arguments; throws a GuestFacingError (TypeError) naming the first problem. */
export function parseCloudRequestOptions(args: readonly unknown[]): CloudRequestOptions {
  const o = args[0];
  if (!isPlainObject(o)) {
    throw new GuestFacingError('TypeError', `${NAME} takes an options object { method, url, region, service, credentials, ... }, got ${kind(o)}`);
  }
  for (const key of Object.keys(o)) {
    if (!OPTION_NAMES.includes(key)) fail(`unknown option ${JSON.stringify(shorten(key))} (the options are ${OPTION_NAMES.join(', ')})`);
  }

  const method = readMethod(o['method']);
  const url = readUrl(o['url']);
  const headers = readHeaders(o['headers']);
  const body = readBody(o['body'], headers);
  const region = readScopePart(o['region'], 'region');
  const service = readScopePart(o['service'], 'service');
  const credentials = readCredentials(o['credentials']);
  const responseType = readResponseType(o['responseType']);
  const timeoutMs = readTimeout(o['timeout']);
  return { method, url, headers, body, region, service, credentials, responseType, timeoutMs };
}

function fail(message: string): never {
  throw new GuestFacingError('TypeError', `${NAME}: ${message}`);
}

function readMethod(v: unknown): CloudMethod {
  if (v === undefined || v === null) fail(`method is required (${CLOUD_METHODS.join(', ')})`);
  const upper = typeof v === 'string' ? v.toUpperCase() : undefined;
  if (upper === undefined || !(CLOUD_METHODS as readonly string[]).includes(upper)) {
    fail(`method must be one of ${CLOUD_METHODS.join(', ')}, got ${shown(v)}`);
  }
  return upper as CloudMethod;
}

function readUrl(v: unknown): string {
  if (v === undefined || v === null) fail('url is required');
  if (typeof v !== 'string') fail(`url must be a string, got ${kind(v)}`);
  try {
    normalizeRequestUrl(v);
  } catch (err) {
    if (err instanceof SigV4InputError) fail(`url ${err.message}`);
    throw err;
  }
  return v;
}

function readHeaders(v: unknown): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  if (v === undefined || v === null) return out;
  if (!isPlainObject(v)) fail(`headers must be an object, got ${kind(v)}`);
  for (const [name, value] of Object.entries(v)) {
    if (!HEADER_NAME.test(name)) fail(`${JSON.stringify(shorten(name))} is not a valid header name`);
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      fail(`the value of header "${shorten(name)}" must be a string, got ${kind(value)}`);
    }
    const text = String(value);
    if (!HEADER_VALUE.test(text)) fail(`the value of header "${shorten(name)}" must be ASCII text without line breaks`);
    const lower = name.toLowerCase();
    if (!TRANSPORT_HEADERS.has(lower)) out[lower] = text;
  }
  return out;
}

/**
 * A string is sent as is (UTF-8); a byte array (Uint8Array, or an Array whose every element is an integer
 * 0..255) as those bytes; any other object or array as JSON with `content-type: application/json` unless
 * one is given, or, when the given content-type is application/x-www-form-urlencoded, as a form (as
 * ld.request does). Sets `headers['content-type']` when it picks one.
 */
function readBody(v: unknown, headers: Record<string, string>): string | Uint8Array | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string' || v instanceof Uint8Array) return v;
  if (v instanceof GuestFormData) fail('body cannot be a FormData: a signed request needs its exact bytes (pass a string or a byte array)');
  if (Array.isArray(v) && v.every((x) => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 255)) {
    return Uint8Array.from(v as number[]);
  }
  if (typeof v !== 'object') fail(`body must be an object, a string or a byte array, got ${kind(v)}`);
  const contentType = headers['content-type'];
  if (contentType?.trim().toLowerCase().startsWith(FORM_URLENCODED)) {
    if (Array.isArray(v)) fail(`an ${FORM_URLENCODED} body must be an object, a string or a byte array, got an array`);
    const form = new URLSearchParams();
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) appendFormValue(form, k, x);
    return form.toString();
  }
  if (contentType === undefined) headers['content-type'] = 'application/json';
  return JSON.stringify(v);
}

/** As ld.request: a primitive as its string, an array's elements under the same name, an object as JSON, null left out. */
function appendFormValue(form: URLSearchParams, key: string, value: unknown): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) for (const x of value) appendFormValue(form, key, x);
  else if (value instanceof Uint8Array) form.append(key, Buffer.from(value).toString('utf8'));
  else if (typeof value === 'object') form.append(key, JSON.stringify(value));
  else form.append(key, String(value));
}

function readScopePart(v: unknown, name: 'region' | 'service'): string {
  if (v === undefined || v === null) fail(`${name} is required`);
  if (typeof v !== 'string' || v === '') fail(`${name} must be a non-empty string, got ${kind(v)}`);
  if (!SCOPE_PART.test(v)) fail(`${name} may contain only letters, digits, ".", "_" and "-"`);
  return v;
}

function readCredentials(v: unknown): SigV4Credentials {
  if (v === undefined || v === null) fail('credentials is required ({ accessKeyId, secretAccessKey, sessionToken? })');
  if (!isPlainObject(v)) fail(`credentials must be an object { accessKeyId, secretAccessKey, sessionToken? }, got ${kind(v)}`);
  const { accessKeyId, secretAccessKey, sessionToken } = v;
  if (typeof accessKeyId !== 'string' || accessKeyId === '') fail(`credentials.accessKeyId must be a non-empty string, got ${kind(accessKeyId)}`);
  if (!ACCESS_KEY_ID.test(accessKeyId)) fail('credentials.accessKeyId may contain only visible ASCII characters other than "/" and ","');
  if (typeof secretAccessKey !== 'string' || secretAccessKey === '') {
    fail(`credentials.secretAccessKey must be a non-empty string, got ${kind(secretAccessKey)}`);
  }
  if (sessionToken === undefined || sessionToken === null || sessionToken === '') return { accessKeyId, secretAccessKey };
  if (typeof sessionToken !== 'string') fail(`credentials.sessionToken must be a string, got ${kind(sessionToken)}`);
  if (!SESSION_TOKEN.test(sessionToken)) fail('credentials.sessionToken may contain only visible ASCII characters');
  return { accessKeyId, secretAccessKey, sessionToken };
}

function readResponseType(v: unknown): CloudResponseType {
  if (v === undefined || v === null) return 'json';
  if (typeof v !== 'string' || !(CLOUD_RESPONSE_TYPES as readonly string[]).includes(v)) {
    fail(`responseType must be one of ${CLOUD_RESPONSE_TYPES.join(', ')}, got ${shown(v)}`);
  }
  return v as CloudResponseType;
}

/** Milliseconds; 0 means no limit of its own (as in ld.request), the call's deadline still applies. */
function readTimeout(v: unknown): number | undefined {
  if (v === undefined || v === null || v === 0) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) fail(`timeout must be a positive number of milliseconds, got ${shown(v)}`);
  return v;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof GuestFormData);
}

/** The kind of a value, never the value: for options that may hold secrets. */
function kind(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'binary data';
  if (v instanceof GuestFormData) return 'a FormData';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** The value itself when it is a short string or a number: only for method, responseType and timeout. */
function shown(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(shorten(v));
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return kind(v);
}

function shorten(s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}
