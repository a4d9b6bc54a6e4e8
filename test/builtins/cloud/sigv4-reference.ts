/**
 * An independent SigV4 computation for the tests only, written from AWS's description of the canonical
 * request ("Create a canonical request for Signature Version 4") with node:crypto. It works from the
 * request as a server receives it (raw path and query), so it checks the production signer (the AWS
 * SDK's @smithy/signature-v4 plus runner/builtins/cloud/sigv4-signer.ts) from the other side.
 */
import { createHash, createHmac } from 'node:crypto';

export interface ReceivedRequest {
  method: string;
  /** The path as received (percent-encoded), without the query. */
  path: string;
  /** The query as received, without `?`. */
  query: string;
  /** Header lines as received, in order; a name may repeat. */
  headers: readonly (readonly [string, string])[];
  /** Lower-case names from the Authorization header's SignedHeaders. */
  signedHeaders: readonly string[];
  /** Hex SHA-256 of the body, or the x-amz-content-sha256 value. */
  payloadHash: string;
  /** S3 rules: no path normalisation and no second encoding. */
  s3: boolean;
}

export interface Scope {
  secretAccessKey: string;
  /** yyyymmddThhmmssZ */
  amzDate: string;
  region: string;
  service: string;
}

/** RFC 3986 unreserved characters as is, every other UTF-8 byte as %XX (upper case). */
export function uriEncode(s: string): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function canonicalRequest(r: ReceivedRequest): string {
  let uri: string;
  if (r.s3) {
    uri = r.path
      .split('/')
      .map((seg) => uriEncode(decodeURIComponent(seg)))
      .join('/');
  } else {
    const segments: string[] = [];
    for (const seg of r.path.split('/')) {
      if (seg === '' || seg === '.') continue;
      if (seg === '..') segments.pop();
      else segments.push(seg);
    }
    const trailing = segments.length > 0 && r.path.endsWith('/') ? '/' : '';
    // The received (still encoded) segments are encoded once more.
    uri = `/${segments.map(uriEncode).join('/')}${trailing}`;
  }
  const pairs = r.query
    .split('&')
    .filter((p) => p !== '')
    .map((p) => {
      const eq = p.indexOf('=');
      const decode = (x: string) => decodeURIComponent(x.replace(/\+/g, ' '));
      return [uriEncode(decode(eq < 0 ? p : p.slice(0, eq))), uriEncode(eq < 0 ? '' : decode(p.slice(eq + 1)))] as const;
    })
    .sort(([ka, va], [kb, vb]) => (ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0));
  const query = pairs.map(([k, v]) => `${k}=${v}`).join('&');
  const headerLines = r.signedHeaders.map((name) => {
    const values = r.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v.trim().replace(/\s+/g, ' '));
    return `${name}:${values.join(',')}\n`;
  });
  return [r.method, uri, query, headerLines.join(''), r.signedHeaders.join(';'), r.payloadHash].join('\n');
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export function stringToSign(creq: string, s: Scope): string {
  return ['AWS4-HMAC-SHA256', s.amzDate, `${s.amzDate.slice(0, 8)}/${s.region}/${s.service}/aws4_request`, sha256Hex(creq)].join('\n');
}

/** The hex signature of a canonical request. */
export function signature(creq: string, s: Scope): string {
  let key: Buffer = Buffer.from(`AWS4${s.secretAccessKey}`, 'utf8');
  for (const part of [s.amzDate.slice(0, 8), s.region, s.service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(stringToSign(creq, s)).digest('hex');
}
