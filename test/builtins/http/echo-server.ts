/**
 * A loopback HTTP server for the ld.request tests: it records every request (method, path, headers,
 * body bytes) and every connection, and answers by path:
 *
 * - `/echo...` (and any unknown path): `{method, path, headers, body}` as JSON; `?status=N` sets the status
 * - `/text`: `text/plain`, not JSON
 * - `/bytes?n=N`: N bytes `i % 256`, `application/octet-stream`
 * - `/big?n=N` (Content-Length) and `/big-chunked?n=N` (chunked): N bytes of `a`
 * - `/gzip`: gzip-encoded JSON; `/bomb`: 8 MiB of zeros, gzip-encoded (a few KB on the wire)
 * - `/slow?ms=N`: answers after N ms (the request records `aborted` when the client gives up)
 * - `/redirect?to=URL&status=N`: a redirect to URL (status 302 by default)
 * - `/hops?n=N`: a chain of N relative redirects ending in `{"done": true}`
 * - `/headers`: two Set-Cookie headers and a custom one
 * - `/latin1`: `text/plain; charset=iso-8859-1` body `café`
 *
 * It listens on a loopback address and port 0 (over TLS when given a key and certificate); `close()`
 * ends every connection and waits for them.
 */
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Set when the client closed the connection before the response was sent. */
  aborted: boolean;
}

export interface EchoServer {
  readonly host: string;
  readonly port: number;
  /** `http://host:port` (`https:` over TLS; brackets around an IPv6 host). */
  readonly origin: string;
  readonly received: Received[];
  /** Connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

const BOMB = gzipSync(Buffer.alloc(8 * 1024 * 1024));

export async function startEchoServer(host = '127.0.0.1', tls?: { key: string; cert: string }): Promise<EchoServer> {
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let connections = 0;
  const listener: RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const rec: Received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), aborted: false };
      received.push(rec);
      res.on('close', () => {
        if (!res.writableFinished) rec.aborted = true;
      });
      answer(url, rec, res, timers);
    });
  };
  const server: Server = tls ? createTlsServer(tls, listener) : createServer(listener);
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    host,
    port,
    origin: `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    received,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function answer(url: URL, rec: Received, res: ServerResponse, timers: Set<NodeJS.Timeout>): void {
  const n = Number(url.searchParams.get('n') ?? '0');
  switch (url.pathname) {
    case '/text':
      res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words, not JSON');
      return;
    case '/bytes':
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from(Array.from({ length: n }, (_, i) => i % 256)));
      return;
    case '/big':
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(n) }).end(Buffer.alloc(n, 'a'));
      return;
    case '/big-chunked': {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // In pieces, without Content-Length: the client only learns the size by reading.
      for (let sent = 0; sent < n; sent += 4096) res.write(Buffer.alloc(Math.min(4096, n - sent), 'a'));
      res.end();
      return;
    }
    case '/gzip':
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(JSON.stringify({ zipped: true })));
      return;
    case '/bomb':
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' }).end(BOMB);
      return;
    case '/slow': {
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"slow":true}');
        },
        Number(url.searchParams.get('ms') ?? '1000'),
      );
      timers.add(timer);
      return;
    }
    case '/redirect':
      res.writeHead(Number(url.searchParams.get('status') ?? '302'), { location: url.searchParams.get('to') ?? '/' }).end();
      return;
    case '/hops':
      if (n > 0) res.writeHead(302, { location: `/hops?n=${n - 1}` }).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}');
      return;
    case '/headers':
      res.setHeader('set-cookie', ['a=1; Path=/', 'b=2']);
      res.setHeader('x-custom', 'yes');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      return;
    case '/latin1':
      res.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' }).end(Buffer.from('café', 'latin1'));
      return;
    default: {
      const status = Number(url.searchParams.get('status') ?? '200');
      const body = { method: rec.method, path: rec.path, headers: rec.headers, body: rec.body.toString('utf8') };
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    }
  }
}
