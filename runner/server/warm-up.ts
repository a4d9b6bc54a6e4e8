/**
 * The runner's warm-up: before it reports ready, it sends itself `LDBOX_RUNNER_WARMUP_CALLS` Execute calls
 * of `return 1` over its own port — binary gRPC on HTTP/2, the hot path clients use — as many at a time as a
 * busy client would keep in flight (warmUpInFlight).
 *
 * Why: a runner fresh from start served its first ~20,000 calls at ~0.77× the rate of a warm one
 * (bench/execute.ts, round 1 of every run), and its resident set grew ~35 MiB (~15 %) over those calls
 * before it stayed flat: V8 optimising the call path on three threads, the young generations and the
 * WASM modules' pages reaching their working size, HTTP/2 stream memory reaching its steady turnover.
 * With the warm-up that happens before `/readyz` and gRPC health say SERVING, so traffic a load balancer
 * sends meets a runner at full speed and at its working memory from the first call, and a memory limit
 * or alert sees the working size at once. The calls run through the same pool, limits and sandboxes as
 * any other call; they are counted in the runner's metrics like any other call.
 *
 * It connects to the address its listener holds, never to a configured name another machine could answer.
 * With TLS it accepts only its own certificate (compared by fingerprint), since a loopback address is
 * rarely among its names; with client certificates (mTLS) it has none to present and skips the warm-up.
 * (The executor's lean unary client, src/executor/grpc-unary-client.ts, is another role's and has no
 * hook for that certificate check: this file keeps its own two-function client.) A warm-up that fails is logged and the runner becomes ready anyway:
 * it only makes the first calls faster.
 */
import http2 from 'node:http2';
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { create, toBinary } from '@bufbuild/protobuf';
import { ExecuteRequestSchema } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { frame } from '../wire/execute-response.js';
import { EXECUTE_PATH } from './execute-paths.js';

export interface WarmUpTarget {
  /** The address the runner's listener is bound to (`server.address()`; a wildcard is reached on loopback). */
  host: string;
  port: number;
  token: string | undefined;
  /** The runner's own certificate (PEM), when its port speaks TLS. */
  tlsCert: Buffer | undefined;
}

export interface WarmUpResult {
  answered: number;
  failed: number;
  ms: number;
}

/**
 * Calls in flight during the warm-up: 64 per worker (what keeps a worker's queue from running dry, the
 * load of bench/execute.ts), no more than the pool admits without RESOURCE_EXHAUSTED (its queue plus the
 * calls it runs at once, LDBOX_RUNNER_MAX_INFLIGHT) nor one HTTP/2 connection may carry. The heaps and the HTTP/2 streams' memory reach
 * the size of that load, so a burst later does not raise the resident set past what `ready` showed.
 */
export function warmUpInFlight(pool: { size: number; maxQueue: number; maxInflight: number }, maxStreamsPerConnection: number): number {
  // The pool admits its queue and, per worker, its share of maxInflight (runner-pool.ts).
  const running = pool.size * Math.max(1, Math.ceil(pool.maxInflight / pool.size));
  return Math.max(1, Math.min(64 * pool.size, pool.maxQueue + running, maxStreamsPerConnection));
}
/** A warm-up that takes longer than this (a machine far busier than usual) stops where it is. */
const MAX_WARM_UP_MS = 30_000;

/** Sends `calls` Execute calls of `return 1` to the runner at `target`, `inFlight` at a time; resolves how many were answered. */
export async function warmUp(target: WarmUpTarget, calls: number, inFlight: number): Promise<WarmUpResult> {
  const started = performance.now();
  const session = await connect(target);
  try {
    const body = frame(toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { code: 'return 1', requestId: 'runner-warm-up' })));
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': EXECUTE_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(target.token === undefined ? {} : { authorization: `Bearer ${target.token}` }),
    };
    let sent = 0;
    let answered = 0;
    let failed = 0;
    const lane = async (): Promise<void> => {
      while (sent < calls && performance.now() - started < MAX_WARM_UP_MS) {
        sent++;
        if (await oneCall(session, headers, body)) answered++;
        else failed++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, calls) }, lane));
    return { answered, failed, ms: performance.now() - started };
  } finally {
    session.close();
  }
}

function connect(target: WarmUpTarget): Promise<http2.ClientHttp2Session> {
  const host = reachableHost(target.host);
  const authority = `${target.tlsCert ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${target.port}`;
  const own = target.tlsCert && new X509Certificate(target.tlsCert).fingerprint256;
  return new Promise((resolve, reject) => {
    const session = http2.connect(authority, own ? { rejectUnauthorized: false, ALPNProtocols: ['h2'] } : {});
    session.once('error', reject);
    session.once('connect', () => {
      session.off('error', reject);
      session.on('error', () => {});
      if (own && (session.socket as TLSSocket).getPeerCertificate().fingerprint256 !== own) {
        session.destroy();
        reject(new Error('the certificate on the port is not the runner’s own'));
        return;
      }
      resolve(session);
    });
  });
}

/** A wildcard bind (0.0.0.0, ::) is reached on loopback. */
function reachableHost(address: string): string {
  if (address === '0.0.0.0') return '127.0.0.1';
  if (address === '::') return '::1';
  return address;
}

/** One call; true when it ended with grpc-status 0. */
function oneCall(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body: Uint8Array): Promise<boolean> {
  return new Promise((resolve) => {
    let status: string | undefined;
    const stream = session.request(headers, { endStream: false });
    stream.on('response', (h) => (status = h['grpc-status'] as string | undefined));
    stream.on('trailers', (h) => (status = h['grpc-status'] as string | undefined));
    stream.on('data', () => {});
    stream.on('error', () => resolve(false));
    stream.on('close', () => resolve(status === '0'));
    stream.end(body);
  });
}
