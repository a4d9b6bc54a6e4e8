/**
 * Bench-only: the slow HTTP API that bench/io.ts's `ld.request` calls reach, in a process of its own (so
 * that its CPU is neither the runner's nor the bench's). Run as
 *
 *   node dist/bench/lib/slow-api.js delay <ms>      every request is answered after exactly <ms> ms
 *   node dist/bench/lib/slow-api.js hold            every request is held until POST /release
 *
 * with an IPC channel: it sends `{type:'ready', port}` once listening on 127.0.0.1 and exits when the
 * channel closes (the bench ended, however it ended).
 *
 * Routes (plain node:http, keep-alive on, no limit on requests per connection):
 * - `GET /now`: 200 at once, counted apart (lets the bench warm the runner's HTTP client up);
 * - `GET /count`, `GET /held`: the requests received so far on the work routes, the requests held now
 *   (plain text numbers);
 * - `GET /stats`: JSON {@link ApiStats};
 * - `POST /release`: (hold mode) answers every held request and every later one at once; answers the count;
 * - `POST /reset-peak`: the peak of open connections starts again from those open now;
 * - anything else: the work route, `200 {"ok":true}` after the delay (or when released), counted.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ApiStats {
  /** Requests received on the work routes. */
  requests: number;
  /** Work requests answered. */
  answered: number;
  /** Work requests held now (hold mode) or waiting for their delay (delay mode). */
  held: number;
  /** `GET /now` requests. */
  now: number;
  /** TCP connections accepted, open now, and the most open at once (since the last reset-peak). */
  connections: number;
  open: number;
  peakOpen: number;
  /** process.cpuUsage(), µs. */
  cpuUserUs: number;
  cpuSystemUs: number;
}

const mode = process.argv[2];
const delayMs = Number(process.argv[3]);
if (!(mode === 'hold' || (mode === 'delay' && Number.isFinite(delayMs) && delayMs >= 0))) {
  console.error(`usage: slow-api.js delay <ms> | hold (got ${process.argv.slice(2).join(' ')})`);
  process.exit(2);
}
if (!process.send) {
  console.error('slow-api.js must be started with an IPC channel (by bench/io.ts)');
  process.exit(2);
}

const stats = { requests: 0, answered: 0, now: 0, connections: 0, open: 0, peakOpen: 0 };
const waiting = new Set<http.ServerResponse>();
let released = false;

const BODY = Buffer.from('{"ok":true}');
function answerWork(res: http.ServerResponse): void {
  waiting.delete(res);
  if (res.destroyed) return;
  stats.answered++;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(BODY.length) });
  res.end(BODY);
}

function text(res: http.ServerResponse, status: number, body: string, type = 'text/plain'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function snapshot(): ApiStats {
  const cpu = process.cpuUsage();
  return { ...stats, held: waiting.size, cpuUserUs: cpu.user, cpuSystemUs: cpu.system };
}

const server = http.createServer({ keepAlive: true }, (req, res) => {
  const url = req.url ?? '/';
  // Control routes.
  if (req.method === 'GET' && url === '/now') {
    stats.now++;
    return text(res, 200, 'now');
  }
  if (req.method === 'GET' && url === '/count') return text(res, 200, String(stats.requests));
  if (req.method === 'GET' && url === '/held') return text(res, 200, String(waiting.size));
  if (req.method === 'GET' && url === '/stats') return text(res, 200, JSON.stringify(snapshot()), 'application/json');
  if (req.method === 'POST' && url === '/release') {
    released = true;
    const n = waiting.size;
    for (const r of [...waiting]) answerWork(r);
    return text(res, 200, String(n));
  }
  if (req.method === 'POST' && url === '/reset-peak') {
    stats.peakOpen = stats.open;
    return text(res, 200, String(stats.open));
  }
  // The work route: the body (if any) is drained, the answer comes after the delay or at release.
  stats.requests++;
  req.resume();
  waiting.add(res);
  res.once('close', () => waiting.delete(res));
  if (mode === 'delay') setTimeout(answerWork, delayMs, res);
  else if (released) answerWork(res);
});
// Keep-alive for longer than any client keeps an idle connection; no per-request deadline (held requests
// wait as long as the bench says).
server.keepAliveTimeout = 120_000;
server.headersTimeout = 121_000;
server.requestTimeout = 0;
server.maxRequestsPerSocket = 0;
server.on('connection', (socket: Socket) => {
  stats.connections++;
  stats.open++;
  if (stats.open > stats.peakOpen) stats.peakOpen = stats.open;
  socket.once('close', () => stats.open--);
});

// A deep accept backlog: thousands of connections may arrive in the same millisecond.
server.listen({ host: '127.0.0.1', port: 0, backlog: 16_384 }, () => {
  process.send!({ type: 'ready', port: (server.address() as AddressInfo).port });
});
process.on('disconnect', () => process.exit(0));
