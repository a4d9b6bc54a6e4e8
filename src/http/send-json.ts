/** The one JSON writer of ldbox's HTTP answers (ops routes, webhook answers and errors). */

/** What it needs of a response: node:http's ServerResponse and node:http2's compat response both fit. */
export interface JsonResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
}

/**
 * Writes `body` as JSON with the status; `Content-Length` is set, so HTTP/1.1 keep-alive works. The body
 * goes to `end()` as a string: node:http then sends the head and the body in one write, where a Buffer
 * body is a second chunk (a corked `writev`), a cost on every webhook's 202.
 */
export function sendJson(res: JsonResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(json, 'utf8')) });
  res.end(json);
}
