/**
 * Runs h2load (nghttp2's C HTTP/2 load generator, Debian package nghttp2-client) and reads its summary.
 * h2load counts a request as succeeded on HTTP 2xx: a gRPC error is a 200 too, so callers must check
 * successes some other way (bench/execute.ts reads the runner's own counters).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface H2loadOptions {
  url: string;
  /** A file holding the request body, sent with every request. */
  bodyFile: string;
  requests: number;
  /** Connections (-c) and streams in flight per connection (-m). */
  connections: number;
  streams: number;
  headers: string[];
  threads?: number;
}

export interface H2loadResult {
  requestsPerSec: number;
  elapsedSec: number;
  succeeded: number;
  failed: number;
  /** Mean time for a request, ms ("time for request" mean). */
  meanMs: number;
  sdMs: number;
}

export async function h2load(o: H2loadOptions): Promise<H2loadResult> {
  const args = ['-n', String(o.requests), '-c', String(o.connections), '-m', String(o.streams), '-t', String(o.threads ?? 1), '-d', o.bodyFile];
  for (const h of o.headers) args.push('-H', h);
  args.push(o.url);
  const { stdout } = await run('h2load', args, { maxBuffer: 16 * 1024 * 1024 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw new Error("h2load is not installed: it comes with Debian's nghttp2-client (apt-get install -y nghttp2-client)");
    throw err;
  });
  const finished = /finished in ([\d.]+)(m?s), ([\d.]+) req\/s/.exec(stdout);
  const requests = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/.exec(stdout);
  const time = /time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)/.exec(stdout);
  if (!finished || !requests || !time) throw new Error(`cannot read h2load's output:\n${stdout}`);
  return {
    requestsPerSec: Number(finished[3]),
    elapsedSec: Number(finished[1]) / (finished[2] === 'ms' ? 1000 : 1),
    succeeded: Number(requests[1]),
    failed: Number(requests[2]),
    meanMs: toMs(time[3]!),
    sdMs: toMs(time[4]!),
  };
}

/** h2load's durations: `421us`, `4.31ms`, `1.2s`. */
function toMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (!m) throw new Error(`not an h2load duration: ${text}`);
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : n * 1000;
}
