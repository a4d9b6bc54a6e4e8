import { GuestFacingError, GuestFormData } from '../guest-boundary.js';
import { undiciLib } from './egress-agent.js';

/**
 * Encodes the `body` option of ld.request (spec "ld.request(options)"): a string and bytes are sent as
 * they are; a FormData built in the sandbox becomes multipart/form-data; any other value is JSON, or
 * `application/x-www-form-urlencoded` when the Content-Type header says so.
 */
export interface EncodedBody {
  body: Uint8Array | string | undefined;
  /** The Content-Type the body needs; undefined when the caller's header (or none) stands. */
  contentType?: string;
  /** True when the body's Content-Type replaces the caller's (multipart needs its boundary). */
  replaceContentType?: boolean;
}

const FORM_URLENCODED = 'application/x-www-form-urlencoded';
const BASE64 = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/;

/** File types by extension for FormData file parts; anything else is application/octet-stream. */
const MIME_TYPES: Readonly<Record<string, string>> = {
  txt: 'text/plain',
  csv: 'text/csv',
  html: 'text/html',
  json: 'application/json',
  xml: 'application/xml',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  parquet: 'application/vnd.apache.parquet',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

/** `contentType` is the caller's Content-Type header, if any. */
export async function encodeBody(value: unknown, contentType: string | undefined): Promise<EncodedBody> {
  if (value === undefined || value === null) return { body: undefined };
  if (typeof value === 'string' || value instanceof Uint8Array) return { body: value };
  if (value instanceof GuestFormData) return encodeForm(value);
  if (contentType?.trim().toLowerCase().startsWith(FORM_URLENCODED)) {
    if (typeof value !== 'object' || Array.isArray(value)) {
      throw new GuestFacingError('TypeError', `ld.request: an ${FORM_URLENCODED} body must be an object or a string, got ${describe(value)}`);
    }
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(value)) appendValue(form, k, v);
    return { body: form.toString() };
  }
  return { body: JSON.stringify(value), contentType: 'application/json' };
}

/**
 * Adds one query or form value: a primitive as its string, each element of an array under the same
 * name, an object as JSON; null and undefined are left out.
 */
export function appendValue(target: URLSearchParams, key: string, value: unknown): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    for (const v of value) appendValue(target, key, v);
    return;
  }
  if (value instanceof Uint8Array) target.append(key, Buffer.from(value).toString('utf8'));
  else if (typeof value === 'object') target.append(key, JSON.stringify(value));
  else target.append(key, String(value));
}

/** Multipart through undici's own FormData serialiser, as bytes: the HTTP core sends a body it can resend on a 307. */
async function encodeForm(form: GuestFormData): Promise<EncodedBody> {
  const { FormData, Response } = undiciLib();
  const out = new FormData();
  form.entries.forEach((entry, i) => {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') {
      throw new GuestFacingError('TypeError', `ld.request: FormData entry ${i} is not (name, value) or (name, base64Content, fileName)`);
    }
    const [name, value, fileName] = entry as [string, unknown, unknown];
    if (entry.length === 2) {
      if (value instanceof Uint8Array) out.append(name, new Blob([new Uint8Array(value)]));
      else out.append(name, typeof value === 'string' ? value : String(value));
      return;
    }
    if (typeof fileName !== 'string') {
      throw new GuestFacingError('TypeError', `ld.request: the file name of FormData entry "${name}" must be a string`);
    }
    let bytes: Uint8Array;
    if (value instanceof Uint8Array) {
      bytes = value;
    } else if (typeof value === 'string') {
      const compact = value.replace(/[\t\n\f\r ]+/g, '');
      if (!BASE64.test(compact)) {
        throw new GuestFacingError('TypeError', `ld.request: the content of FormData file "${name}" (${fileName}) is not valid base64`);
      }
      bytes = Buffer.from(compact, 'base64');
    } else {
      throw new GuestFacingError('TypeError', `ld.request: the content of FormData file "${name}" (${fileName}) must be a base64 string`);
    }
    out.append(name, new Blob([new Uint8Array(bytes)], { type: mimeType(fileName) }), fileName);
  });
  const encoded = new Response(out);
  const body = new Uint8Array(await encoded.arrayBuffer());
  return { body, contentType: encoded.headers.get('content-type') ?? undefined, replaceContentType: true };
}

function mimeType(fileName: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(fileName)?.[1]?.toLowerCase();
  return (ext !== undefined && MIME_TYPES[ext]) || 'application/octet-stream';
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'binary data';
  if (v instanceof GuestFormData) return 'a FormData';
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return `an ${typeof v}`.replace(/^an ([^aeiou])/, 'a $1');
}
