import type * as HashNode from '@smithy/hash-node';
import type * as SignatureV4Lib from '@smithy/signature-v4';
import { lazyRequire } from '../lazy-require.js';

/** AWS's signer, loaded when the thread first signs (lazy-require.ts). */
const hashNode = lazyRequire<typeof HashNode>('@smithy/hash-node');
const signatureV4 = lazyRequire<typeof SignatureV4Lib>('@smithy/signature-v4');

/** Loads the signer now (a worker preloading what its first calls would otherwise load). */
export function loadSigV4Signer(): void {
  hashNode();
  signatureV4();
}

/**
 * SigV4 request signing for `ld.cloudRequest` (spec "ld.cloudRequest(options)"), done by AWS's own signer
 * (`@smithy/signature-v4`, the one inside the AWS SDK for JavaScript v3). What this module adds is the part
 * the library leaves to its caller: turning a URL into the exact request that goes on the wire, so that
 * what is signed and what is sent cannot drift apart.
 *
 * - The URL is parsed (WHATWG) and its path and query are re-encoded in the strict SigV4 form
 *   (RFC 3986 unreserved characters kept, every other byte `%XX`); the returned `url` is what must be sent.
 *   In the query, `+` means a space (as in URLSearchParams); write `%2B` for a plus sign.
 * - Non-S3 services: the canonical path is normalised (dot segments, `//`) and encoded once more, as AWS
 *   computes it from the received path. S3-family services: the path is signed as sent (no normalisation,
 *   no second encoding), as S3 requires.
 * - Repeated header names (in any letter case) become one header whose values are joined by `,`: the
 *   canonical form of repeated header lines, and the same request for HTTP (RFC 9110 §5.3).
 * - `Host` always comes from the URL. A caller's `Host`, `Authorization`, `X-Amz-Date` and `Date` are
 *   dropped (the library would drop them from what it signs), and so is `X-Amz-Security-Token` when a
 *   session token is given: the signature sets host, authorization, x-amz-date and the token itself.
 *
 * Checked against the official AWS SigV4 test suite: test/builtins/cloud/sigv4-vectors.test.ts.
 */

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials: sent (and signed) as `X-Amz-Security-Token`. Empty means none. */
  sessionToken?: string | undefined;
}

export interface SigV4Request {
  method: string;
  /** Absolute http(s) URL. */
  url: string;
  /** Header names in any case; a list of pairs may repeat a name. */
  headers?: Readonly<Record<string, string>> | readonly (readonly [string, string])[];
  body?: string | Uint8Array | undefined;
}

export interface SigV4Params {
  region: string;
  service: string;
  credentials: SigV4Credentials;
  /** The signing time; now when absent (tests pass the test suite's fixed date). */
  signingDate?: Date;
  /**
   * Send (and sign) `X-Amz-Content-Sha256` with the body's SHA-256. Default: on for the services that
   * require it (S3 and its variants, Glacier, OpenSearch Serverless), off otherwise. A caller's own
   * `X-Amz-Content-Sha256` header (e.g. `UNSIGNED-PAYLOAD`) is always kept and used as the payload hash.
   */
  contentSha256?: boolean;
}

export interface SignedRequest {
  /** The URL to send: the input URL with its path and query in the encoding that was signed, no fragment. */
  url: string;
  /**
   * Every header to send, names in lower case: the caller's (merged) headers plus host, x-amz-date,
   * authorization, and x-amz-security-token / x-amz-content-sha256 when they apply.
   */
  headers: Record<string, string>;
}

/** A request that cannot be signed as given; its message names the problem, never a value. */
export class SigV4InputError extends Error {
  override readonly name = 'SigV4InputError';
}

/** Services that sign the path as sent (no normalisation, single encoding): S3 and its variants. */
const S3_FAMILY = new Set(['s3', 's3-object-lambda', 's3-outposts', 's3express']);
/** Services that require `X-Amz-Content-Sha256`. */
const CONTENT_SHA256_SERVICES = new Set([...S3_FAMILY, 'glacier', 'aoss']);

/** Headers the signature sets or the library removes from what it signs (GENERATED_HEADERS). */
const REPLACED = new Set(['host', 'authorization', 'x-amz-date', 'date']);

/** Signs `request` for `params`; returns the URL and headers to send (the body is sent as given). */
export async function signSigV4(request: SigV4Request, params: SigV4Params): Promise<SignedRequest> {
  const target = normalizeRequestUrl(request.url);
  const s3 = S3_FAMILY.has(params.service);
  const sessionToken = params.credentials.sessionToken || undefined;

  const headers = mergeHeaders(request.headers ?? {}, sessionToken !== undefined);
  // Null-prototype records: a header named __proto__ stays a header.
  const toSign = record([['host', target.host], ...headers]);

  const { SignatureV4 } = signatureV4();
  const { Hash } = hashNode();
  const signer = new SignatureV4({
    service: params.service,
    region: params.region,
    credentials: {
      accessKeyId: params.credentials.accessKeyId,
      secretAccessKey: params.credentials.secretAccessKey,
      ...(sessionToken === undefined ? {} : { sessionToken }),
    },
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: !s3,
    applyChecksum: params.contentSha256 ?? CONTENT_SHA256_SERVICES.has(params.service),
  });
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      path: target.path,
      query: target.query,
      headers: toSign,
      body: request.body,
    },
    { signingDate: params.signingDate ?? new Date() },
  );

  // The library adds its headers in lower case; every header is sent so (as the HTTP core expects).
  const out = record([...headers, ['host', target.host]]);
  for (const name of ['x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256', 'authorization']) {
    const value = signed.headers[name];
    if (value !== undefined && !Object.hasOwn(out, name)) out[name] = value;
  }
  return { url: target.url, headers: out };
}

/**
 * One `[lower-case name, value]` per header name, minus the ones the signature sets. Repeated names (in
 * any case) are trimmed and joined with `,`, in order, as SigV4 canonicalises repeated header lines;
 * a single value is kept as given.
 */
function mergeHeaders(input: NonNullable<SigV4Request['headers']>, hasToken: boolean): [string, string][] {
  const pairs: readonly (readonly [string, string])[] = Array.isArray(input)
    ? (input as readonly (readonly [string, string])[])
    : Object.entries(input as Record<string, string>);
  const byName = new Map<string, string[]>();
  for (const [name, value] of pairs) {
    const lower = name.toLowerCase();
    if (REPLACED.has(lower) || (hasToken && lower === 'x-amz-security-token')) continue;
    const seen = byName.get(lower);
    if (seen) seen.push(value);
    else byName.set(lower, [value]);
  }
  return [...byName].map(([lower, values]) => [lower, values.length === 1 ? (values[0] as string) : values.map((v) => v.trim()).join(',')]);
}

function record(entries: readonly (readonly [string, string])[]): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [k, v] of entries) out[k] = v;
  return out;
}

export interface NormalizedUrl {
  /** The URL to send. */
  url: string;
  protocol: string;
  hostname: string;
  port: number | undefined;
  /** `host[:port]` as the Host header carries it (default port left out). */
  host: string;
  /** Strictly encoded path, as sent. */
  path: string;
  /** Decoded query parameters, for the library's canonical query string. */
  query: Record<string, string | string[]>;
}

/**
 * Parses an absolute http(s) URL and re-encodes its path and query in the strict SigV4 form.
 * Throws SigV4InputError (without the URL in the message) when that is impossible.
 */
export function normalizeRequestUrl(raw: string): NormalizedUrl {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new SigV4InputError('is not a valid absolute URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new SigV4InputError('must use http: or https:');
  if (u.username !== '' || u.password !== '') throw new SigV4InputError('must not contain a user name or password');
  if (u.hostname === '') throw new SigV4InputError('has no host');

  const path = u.pathname
    .split('/')
    .map((segment) => strictEncode(percentDecode(segment, false)))
    .join('/');

  const query: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  const sent: string[] = [];
  for (const piece of u.search.slice(1).split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    const key = percentDecode(eq < 0 ? piece : piece.slice(0, eq), true);
    const value = eq < 0 ? '' : percentDecode(piece.slice(eq + 1), true);
    const prev = query[key];
    query[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    sent.push(eq < 0 ? strictEncode(key) : `${strictEncode(key)}=${strictEncode(value)}`);
  }
  const search = sent.length > 0 ? `?${sent.join('&')}` : '';
  const port = u.port === '' ? undefined : Number(u.port);
  return {
    url: `${u.protocol}//${u.host}${path}${search}`,
    protocol: u.protocol,
    hostname: u.hostname,
    port,
    host: u.host,
    path,
    // The library drops a key whose value is not a string or a list: a bare `?acl` is signed as `acl=`.
    query: { ...query },
  };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const UTF8_ENCODER = new TextEncoder();

/** Percent-decodes (a `%` without two hex digits stays literal); the bytes must be UTF-8. */
function percentDecode(s: string, plusIsSpace: boolean): string {
  if (plusIsSpace) s = s.replace(/\+/g, ' ');
  if (!s.includes('%')) return s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; ) {
    if (s[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      const cp = s.codePointAt(i) as number;
      const ch = String.fromCodePoint(cp);
      for (const b of UTF8_ENCODER.encode(ch)) bytes.push(b);
      i += ch.length;
    }
  }
  try {
    return UTF8.decode(new Uint8Array(bytes));
  } catch {
    throw new SigV4InputError('has percent-encoded bytes that are not UTF-8');
  }
}

/** SigV4's URI encoding: RFC 3986 unreserved characters as is, every other UTF-8 byte as `%XX`. */
function strictEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
