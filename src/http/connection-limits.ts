/**
 * The transport limits (src/config/http-limits-config.ts) applied to node's servers, the same way on every
 * role's ports. Tests: test/runner/transport-limits.test.ts, test/gateway/transport-limits.test.ts.
 */
import type http from 'node:http';
import http2 from 'node:http2';
import type { HttpLimits } from '../config/http-limits-config.js';

/**
 * Options for `http.createServer`: node checks `headersTimeout` (the request head) and `requestTimeout`
 * (head and body) only every `connectionsCheckingInterval` (default 30 s), so a 20 s headers timeout used
 * to fire after up to 50 s; the interval follows the shortest timeout here. Both answer 408 and close.
 */
export function http1ServerOptions(limits: HttpLimits): http.ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    connectionsCheckingInterval: Math.max(5, Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.bodyTimeoutMs) / 4))),
  };
}

/** Applies what `http.createServer`'s options cannot: the connection cap (for servers that listen themselves). */
export function limitHttp1Server(server: http.Server, limits: HttpLimits): void {
  server.maxConnections = limits.maxConnections;
  // node:http's own default of 5 s would otherwise override keepAliveTimeout set in the options on old nodes.
  server.keepAliveTimeout = limits.idleTimeoutMs;
}

/** Options for `http2.createServer`: SETTINGS_MAX_CONCURRENT_STREAMS (more streams are REFUSED_STREAM). */
export function http2ServerSettings(limits: HttpLimits): http2.Settings {
  return { maxConcurrentStreams: limits.maxStreamsPerConnection };
}

/**
 * HTTP/2 timeouts node does not have: a session with no stream open for `idleTimeoutMs` is closed
 * (GOAWAY); a stream whose request body has not ended `bodyTimeoutMs` after it opened is reset
 * (CANCEL), so half-open streams cannot hold a session's slots forever.
 */
export function limitHttp2Server(server: http2.Http2Server, limits: HttpLimits): void {
  server.on('session', (session) => {
    let open = 0;
    let idle: NodeJS.Timeout | undefined;
    const arm = (): void => {
      idle = setTimeout(() => {
        session.close();
        // A peer that does not answer the GOAWAY is not waited for.
        setTimeout(() => session.destroy(), limits.idleTimeoutMs).unref();
      }, limits.idleTimeoutMs);
      idle.unref();
    };
    arm();
    session.on('stream', (stream) => {
      open++;
      clearTimeout(idle);
      const body = setTimeout(() => {
        if (!stream.readableEnded && !stream.endAfterHeaders && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      }, limits.bodyTimeoutMs);
      body.unref();
      stream.once('end', () => clearTimeout(body));
      stream.once('close', () => {
        clearTimeout(body);
        if (--open === 0 && !session.closed && !session.destroyed) arm();
      });
    });
    session.once('close', () => clearTimeout(idle));
  });
}
