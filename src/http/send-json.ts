/** The one JSON writer of ldbox's HTTP answers (ops routes, webhook answers and errors). */

/** What it needs of a response: node:http's ServerResponse and node:http2's compat response both fit. */
export interface JsonResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: Buffer): unknown;
}

/** Writes `body` as JSON with the status; `Content-Length` is set, so HTTP/1.1 keep-alive works. */
export function sendJson(res: JsonResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const data = Buffer.from(JSON.stringify(body), 'utf8');
  res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': String(data.length) });
  res.end(data);
}
