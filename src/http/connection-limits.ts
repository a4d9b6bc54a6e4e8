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

/** What {@link limitHttp2Server} needs to know of a server's streams. */
export interface Http2LimitOptions {
  /**
   * True for a stream whose request body is not meant to end: a long-lived stream that carries many calls
   * (the runner's ExecuteStream). Such a stream gets no body timer; it must bound its own lifetime (the
   * runner's ExecuteStream ends itself once idle, and each of its calls has a deadline). Called with the
   * stream's request headers, after the server's own 'stream' listeners (a claimStreamsFirst claim
   * included) have seen the stream, so it can be told by its headers alone.
   */
  longLived?: (headers: http2.IncomingHttpHeaders) => boolean;
}

/**
 * HTTP/2 timeouts node does not have: a session with no stream open for `idleTimeoutMs` is closed
 * (GOAWAY); a stream whose request body has not ended `bodyTimeoutMs` after it opened is reset
 * (CANCEL), so half-open streams cannot hold a session's slots forever. A stream `options.longLived`
 * names is not a request body with an end: no body timer applies to it (it counts as open for the session's
 * idle timer as long as it is open, as a call in flight does).
 */
export function limitHttp2Server(server: http2.Http2Server, limits: HttpLimits, options: Http2LimitOptions = {}): void {
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
    // Node's own listener (which emits the server's 'stream') was added before the server's 'session' event:
    // this one sees each stream after the server's handlers have.
    session.on('stream', (stream, headers) => {
      open++;
      clearTimeout(idle);
      stream.once('close', () => {
        if (--open === 0 && !session.closed && !session.destroyed) arm();
      });
      if (options.longLived?.(headers)) return;
      const body = setTimeout(() => {
        if (!stream.readableEnded && !stream.endAfterHeaders && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      }, limits.bodyTimeoutMs);
      body.unref();
      stream.once('end', () => clearTimeout(body));
      stream.once('close', () => clearTimeout(body));
    });
    session.once('close', () => clearTimeout(idle));
  });
}
