/**
 * A few static files served under one URL prefix (the gateway's web console, `/console/`), read once when
 * the route is built and answered from memory.
 *
 * Only the regular files directly in the folder whose extension has a known type are served, looked up by
 * their exact name in a map: a path with `..`, `%2e%2e`, a slash, a backslash or any other name not in the
 * folder is simply not a key, so nothing outside the folder (or under it) can be reached. Nothing is decoded.
 *
 * - `GET|HEAD <prefix>` → 308 to `<prefix>/` (so that the page's relative URLs resolve under the prefix);
 * - `GET|HEAD <prefix>/` → `index.html`; `<prefix>/<name>` → the file, with its type, a strong ETag
 *   (`If-None-Match` → 304) and `Cache-Control: no-cache`; an unknown name → 404;
 * - any other method → 405 with `Allow: GET, HEAD`;
 * - every answer carries `X-Content-Type-Options: nosniff` and the caller's headers (the console's CSP).
 *
 * The files hold no data, so no token is asked for here: the page asks for the admin token and sends it
 * on its own control-plane calls. Tests: test/http/static-files.test.ts.
 */
import { createHash } from 'node:crypto';
import { type Dirent, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerThenDiscard } from './discard-body.js';

/** The types of the files that are served, by extension; other files in the folder are not served. */
export const STATIC_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

/** At most this much of a request body sent to a static path is read (and dropped) before the connection closes. */
const DISCARD_BYTES = 64 * 1024;

export interface StaticFilesOptions {
  /** The URL path the files are served under, without a trailing slash, e.g. `/console`. */
  prefix: string;
  /** The folder whose files are served (its subfolders are not). */
  dir: string;
  /** Headers of every answer besides the type, length and nosniff (e.g. `Content-Security-Policy`). */
  headers?: Readonly<Record<string, string>>;
}

/** One file, ready to send. */
interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
}

/** Answers a request under the prefix and returns true, or returns false (writing nothing) for any other path. */
export type StaticRoute = (req: IncomingMessage, res: ServerResponse, pathname: string) => boolean;

export interface StaticFiles {
  route: StaticRoute;
  /** The names served (for a log line, and a warning when the folder is empty or missing). */
  names: readonly string[];
}

/** Reads the folder's servable files; a missing folder serves nothing (every path under the prefix is 404). */
export function loadStaticFiles(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return files;
    throw err;
  }
  for (const e of entries) {
    const type = STATIC_TYPES[extname(e.name).toLowerCase()];
    if (!e.isFile() || type === undefined) continue;
    const body = readFileSync(join(dir, e.name));
    files.set(e.name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` });
  }
  return files;
}

/** Builds the route over the files of `options.dir` as they are now. */
export function createStaticFiles(options: StaticFilesOptions): StaticFiles {
  const { prefix } = options;
  const files = loadStaticFiles(options.dir);
  const common = { ...options.headers, 'x-content-type-options': 'nosniff' };

  const send = (req: IncomingMessage, res: ServerResponse, status: number, headers: Record<string, string>, body: Buffer): void => {
    res.writeHead(status, { ...common, ...headers, 'content-length': String(body.length) });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  const sendText = (req: IncomingMessage, res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void =>
    send(req, res, status, { ...headers, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, Buffer.from(`${text}\n`, 'utf8'));

  const route: StaticRoute = (req, res, pathname) => {
    if (pathname !== prefix && !pathname.startsWith(`${prefix}/`)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      answerThenDiscard(req, res, DISCARD_BYTES, () => sendText(req, res, 405, 'method not allowed: GET or HEAD', { allow: 'GET, HEAD' }));
      return true;
    }
    if (pathname === prefix) {
      sendText(req, res, 308, `moved to ${prefix}/`, { location: `${prefix}/` });
      return true;
    }
    const name = pathname.slice(prefix.length + 1) || 'index.html';
    const file = files.get(name);
    if (file === undefined) {
      sendText(req, res, 404, 'not found');
      return true;
    }
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, { ...common, etag: file.etag, 'cache-control': 'no-cache' });
      res.end();
      return true;
    }
    send(req, res, 200, { 'content-type': file.type, etag: file.etag, 'cache-control': 'no-cache' }, file.body);
    return true;
  };
  return { route, names: [...files.keys()].sort() };
}
