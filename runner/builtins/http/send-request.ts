import { isIP } from 'node:net';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate, inflateRaw, type InputType, type ZlibOptions } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { type BuiltinContext, GuestFacingError } from '../guest-boundary.js';
import { type EgressAgent, egressAgentFor } from './egress-agent.js';
import { EgressConfigError, isEgressRefused } from './egress-guard.js';

/**
 * The HTTP core of ld.request, shared with the other HTTP built-ins (ld.cloudRequest): sends one
 * prepared request through the egress-guarded dispatcher, follows redirects, and reads the response
 * within the call's limits. Spec "ld.request(options)"; DESIGN "outbound HTTP from ld.request".
 */

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export const RESPONSE_TYPES = ['json', 'text', 'stream', 'binary'] as const;
export type ResponseType = (typeof RESPONSE_TYPES)[number];

/** A request ready to send: header names in lower case, the body already encoded. */
export interface PreparedRequest {
  method: HttpMethod;
  url: URL | string;
  headers: Readonly<Record<string, string>>;
  body: Uint8Array | string | undefined;
}

export interface SendOptions {
  /** `json` and `text` give `{status, headers, text}`; `stream` and `binary` give `{status, headers, buffer, success}`. */
  responseType: ResponseType;
  /** Time for the whole request (redirects and body included), in ms; capped by the call's deadline. */
  timeoutMs?: number | undefined;
  /** Redirects followed (default 5); with 0 a redirect response is the result. */
  maxRedirects?: number;
  /** The built-in's name in error messages (default `ld.request`). */
  name?: string;
  /** Defaults to the worker's dispatcher for `ctx.config.egressAllow`; tests pass their own. */
  agent?: EgressAgent;
}

/** Response headers: lower-case names, repeated headers joined with ", ". */
export type ResponseHeaders = Record<string, string>;

/** The guest adds `json` (parsed `text`, or undefined) to this result: binding mode `http`. */
export interface TextResult {
  status: number;
  headers: ResponseHeaders;
  text: string;
}

/** `buffer` reaches the guest as an ArrayBuffer. */
export interface BinaryResult {
  status: number;
  headers: ResponseHeaders;
  buffer: Uint8Array;
  success: boolean;
}

export type HttpResult = TextResult | BinaryResult;

const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/**
 * Headers not sent on to another origin after a redirect: credentials, and a Host of the old origin.
 * Any other header that carries a value of `data.auth` (`x-api-key`) is dropped too (credentialHeaders).
 */
const ORIGIN_HEADERS = ['authorization', 'cookie', 'proxy-authorization', 'host'];

/**
 * Counts one request against the call's limit (`LDBOX_MAX_REQUESTS_PER_CALL`, shared by every HTTP
 * built-in) and throws a RangeError once it is reached. `sendRequest` calls it; exported for
 * built-ins that must refuse before preparing a request.
 */
export function countRequest(ctx: BuiltinContext, name = 'ld.request'): void {
  const max = ctx.config.maxRequestsPerCall;
  if (ctx.counters.requests >= max) {
    throw new GuestFacingError('RangeError', `${name}: this call reached its limit of ${max} requests`);
  }
  ctx.counters.requests++;
}

/** The URL as shown in messages: no user info, no query (secrets often live there), no fragment. */
export function displayUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * Sends `prepared` and reads the response. Redirects (301, 302, 303, 307, 308) are followed up to
 * `maxRedirects`, each hop through the egress guard; 303, and 301/302 after a POST, continue as a GET
 * without body; credentials (Authorization, Cookie, Proxy-Authorization, and any header holding a
 * value of `data.auth`) are dropped when the origin changes (test/builtins/http/request-redirects.test.ts,
 * request-redirect-downgrade.test.ts). Non-2xx statuses are results.
 * Every failure is a GuestFacingError with a message that names the method and the URL without its
 * query: refused by the egress guard, a network failure, the timeout, the size or count limit.
 */
export async function sendRequest(prepared: PreparedRequest, options: SendOptions, ctx: BuiltinContext): Promise<HttpResult> {
  const name = options.name ?? 'ld.request';
  let url = toUrl(prepared.url, name);
  const agent = options.agent ?? agentFor(ctx, name);
  countRequest(ctx, name);
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;

  const remaining = ctx.deadline - performance.now();
  if (remaining <= 0 || ctx.signal.aborted) throw new GuestFacingError('Error', `${name}: the call's time limit was reached`);
  const userTimeout = options.timeoutMs !== undefined && options.timeoutMs > 0 && options.timeoutMs <= remaining;
  // One controller per request, aborted by its timer or by the end of the call (through onEnd, not a
  // listener on ctx.signal per request).
  const controller = new AbortController();
  const signal = controller.signal;
  let timedOut = false;
  const timeout = setTimeout(
    () => {
      timedOut = true;
      controller.abort(new Error('timeout'));
    },
    userTimeout ? options.timeoutMs : remaining,
  );
  const unregister = ctx.onEnd(() => controller.abort(new Error('the sandbox call ended')));

  let method: HttpMethod = prepared.method;
  let headers: Record<string, string> = { ...prepared.headers };
  let body = prepared.body;
  let hop = 0;
  try {
    for (; ; hop++) {
      checkTarget(url, agent, name, hop);
      const res = await agent.dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method,
        headers,
        body: body ?? null,
        signal,
        // The timer above bounds the whole request; undici's own idle timers stay out of its way.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      const location = headerValue(res.headers['location']);
      if (!REDIRECTS.has(res.statusCode) || location === undefined || maxRedirects === 0) {
        return await readResponse(res, options.responseType, ctx, name);
      }
      await res.body.dump().catch(() => undefined);
      if (hop >= maxRedirects) {
        throw new GuestFacingError('Error', `${name} failed: more than ${maxRedirects} redirects (${method} ${displayUrl(url)})`);
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new GuestFacingError('Error', `${name} failed: the redirect from ${displayUrl(url)} has an invalid Location`);
      }
      if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        headers = withoutHeaders(headers, ['content-type', 'content-length']);
      }
      // Another scheme (an https to http downgrade too), host or port is another origin.
      if (next.origin !== url.origin) headers = withoutHeaders(headers, [...ORIGIN_HEADERS, ...credentialHeaders(headers, ctx)]);
      url = next;
    }
  } catch (err) {
    throw describeFailure(err, { name, method, url, hop, timedOut, userTimeout, timeoutMs: options.timeoutMs });
  } finally {
    clearTimeout(timeout);
    unregister();
  }
}

function toUrl(raw: URL | string, name: string): URL {
  try {
    return new URL(raw);
  } catch {
    throw new GuestFacingError('TypeError', `${name}: url must be an absolute URL such as https://api.example.com/items`);
  }
}

function agentFor(ctx: BuiltinContext, name: string): EgressAgent {
  try {
    return egressAgentFor(ctx.config.egressAllow);
  } catch (err) {
    if (err instanceof EgressConfigError) {
      throw new GuestFacingError('Error', `${name} is unavailable: the runner's egress allow list (LDBOX_EGRESS_ALLOW) is invalid`);
    }
    throw err;
  }
}

/**
 * Refuses a target before any connection when the URL alone decides it: a scheme other than http(s)
 * or an IP-literal host the guard blocks (the connector checks again, and checks resolved names).
 */
function checkTarget(url: URL, agent: EgressAgent, name: string, hop: number): void {
  const what = hop === 0 ? displayUrl(url) : `the redirect to ${displayUrl(url)}`;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new GuestFacingError(hop === 0 ? 'TypeError' : 'Error', `${name} refused ${what}: only http: and https: URLs are supported`);
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host) === 0) return;
  const refused = agent.guard.check(host, host);
  if (refused) throw new GuestFacingError('Error', `${name} refused ${what}: ${refused.message}`);
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The names of the headers whose value holds a secret of the call (one the call's redaction changes). */
function credentialHeaders(headers: Readonly<Record<string, string>>, ctx: BuiltinContext): string[] {
  return Object.entries(headers)
    .filter(([, v]) => ctx.redact(v) !== v)
    .map(([k]) => k.toLowerCase());
}

function withoutHeaders(headers: Record<string, string>, names: readonly string[]): Record<string, string> {
  // No prototype: a header named __proto__ stays a header.
  const out = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(headers)) if (!names.includes(k.toLowerCase())) out[k] = v;
  return out;
}

async function readResponse(res: Dispatcher.ResponseData, responseType: ResponseType, ctx: BuiltinContext, name: string): Promise<HttpResult> {
  const headers: ResponseHeaders = Object.create(null) as ResponseHeaders;
  for (const [k, v] of Object.entries(res.headers)) {
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  const limit = ctx.config.maxResponseBytes;
  const tooLarge = () => new GuestFacingError('RangeError', `${name}: the response body is larger than the limit of ${limit} bytes`);
  const encoding = (headers['content-encoding'] ?? '').trim().toLowerCase();
  const declared = Number(headers['content-length']);
  if (encoding === '' && Number.isFinite(declared) && declared > limit) {
    res.body.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    // Stop reading at once: a body over the limit is an error, never silently cut.
    if (size > limit) {
      res.body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  let bytes: Buffer = Buffer.concat(chunks, size);
  if (Object.hasOwn(DECODERS, encoding)) {
    if (bytes.byteLength > 0) bytes = await decode(bytes, encoding, limit, name, tooLarge);
    // The body is no longer encoded (as axios does, so that code saving it is not misled).
    delete headers['content-encoding'];
  }
  const status = res.statusCode;
  if (responseType === 'stream' || responseType === 'binary') {
    return { status, headers, buffer: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), success: status >= 200 && status <= 299 };
  }
  return { status, headers, text: decodeText(bytes, headers['content-type']) };
}

type Decompress = (buf: InputType, options: ZlibOptions) => Promise<Buffer>;
const DECODERS: Readonly<Record<string, Decompress>> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  br: promisify(brotliDecompress) as Decompress,
  deflate: async (buf, options) => {
    // "deflate" is meant to be zlib-wrapped, but some servers send raw deflate.
    const zlibHeader = buf instanceof Uint8Array && buf.byteLength >= 2 && (buf[0]! & 0x0f) === 8 && ((buf[0]! << 8) | buf[1]!) % 31 === 0;
    return zlibHeader ? promisify(inflate)(buf, options) : promisify(inflateRaw)(buf, options);
  },
};

/** Undoes a gzip, deflate or br Content-Encoding, within the size limit (a small body can inflate hugely). */
async function decode(bytes: Buffer, encoding: string, limit: number, name: string, tooLarge: () => GuestFacingError): Promise<Buffer> {
  const decoder = DECODERS[encoding]!;
  try {
    return await decoder(bytes, { maxOutputLength: limit });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw new GuestFacingError('Error', `${name} failed: the response body is not valid ${encoding}`);
  }
}

function decodeText(bytes: Uint8Array, contentType: string | undefined): string {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  if (charset !== undefined) {
    try {
      return new TextDecoder(charset).decode(bytes);
    } catch {
      // An unknown charset: read it as UTF-8.
    }
  }
  return new TextDecoder().decode(bytes);
}

interface FailureInfo {
  name: string;
  method: string;
  url: URL;
  hop: number;
  timedOut: boolean;
  userTimeout: boolean;
  timeoutMs: number | undefined;
}

function describeFailure(err: unknown, f: FailureInfo): GuestFacingError {
  if (err instanceof GuestFacingError) return err;
  const where = `${f.method} ${displayUrl(f.url)}`;
  if (isEgressRefused(err)) {
    return new GuestFacingError('Error', `${f.name} refused ${f.hop === 0 ? '' : 'the redirect to '}${displayUrl(f.url)}: ${err.message}`);
  }
  if (f.timedOut) {
    return new GuestFacingError(
      'Error',
      f.userTimeout ? `${f.name} timed out after ${f.timeoutMs} ms (${where})` : `${f.name} did not finish before the call's time limit (${where})`,
    );
  }
  return new GuestFacingError('Error', `${f.name} failed: ${networkReason(err, f.url)} (${where})`);
}

/** A short reason for a network failure, from its code only: system messages can carry local details. */
function networkReason(err: unknown, url: URL): string {
  const first = err instanceof AggregateError && err.errors.length > 0 ? err.errors[0] : err;
  const code = String((first as { code?: unknown } | null)?.code ?? (err as { code?: unknown } | null)?.code ?? '');
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return 'the server closed the connection';
    case 'ENOTFOUND':
    case 'EAI_NONAME':
    case 'ENODATA':
      return `the host name ${url.hostname} could not be resolved`;
    case 'EAI_AGAIN':
      return `the host name ${url.hostname} could not be resolved (temporary DNS failure)`;
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'the connection timed out';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'the host is unreachable';
    case 'UND_ERR_HEADERS_OVERFLOW':
      return 'the response headers are too large';
    default:
      if (/^HPE_/.test(code)) return 'the response is not valid HTTP';
      if (/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_)/.test(code)) return `TLS error (${code})`;
      return /^[A-Z][A-Z0-9_]{1,40}$/.test(code) ? `network error (${code})` : 'network error';
  }
}
