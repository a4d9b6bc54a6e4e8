import type http from 'node:http';
import type http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';

/** What every HTTP/2 connection without TLS ("prior knowledge", RFC 9113 §3.4) sends first. */
export const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface DualProtocolListenerOptions {
  http1: http.Server;
  http2: http2.Http2Server;
  /**
   * A connection that has not shown its protocol within this long is closed, so clients that connect
   * and send nothing cannot pile up sockets. An absolute deadline from the connection's start: a preface
   * trickled one byte at a time does not extend it. Default 10 s.
   */
  sniffTimeoutMs?: number;
  /**
   * When set, the port speaks TLS only: the protocol is chosen by ALPN (`h2`, else HTTP/1.1) and
   * `sniffTimeoutMs` bounds the handshake. With `requestCert` and `rejectUnauthorized` (mTLS), a client
   * without a certificate the CA issued is refused during the handshake, before any byte of HTTP.
   */
  tls?: tls.TlsOptions;
  /** Open connections (sniffing or handed over); beyond it new ones are closed at once. Default unlimited. */
  maxConnections?: number;
}

export interface DualProtocolListener {
  /** The listening socket; `listen()` it. Neither protocol server listens itself. */
  readonly server: net.Server;
  /**
   * Stops accepting, drops the connections whose protocol is not known yet, and resolves once every
   * connection, including those handed over, has closed (closing those is their server's job).
   */
  close(): Promise<void>;
}

/**
 * One TCP port for HTTP/1.1 and cleartext HTTP/2. Each connection is read until its first bytes either
 * match the HTTP/2 preface in full (handed to `http2`) or stop matching it (handed to `http1`); the bytes
 * read are put back first, so the chosen server parses the stream from its start. Prometheus and curl
 * speak HTTP/1.1 while gRPC clients send the preface at once, and neither can be told to switch.
 *
 * A first packet may be shorter than the preface, so only the bytes received so far are compared and
 * more are awaited while they are a prefix of it. Test: test/runner/http1-port.test.ts.
 *
 * With `options.tls` there is nothing to sniff: ALPN names the protocol (see createTlsListener below;
 * test: test/runner/runner-tls.test.ts).
 */
export function createDualProtocolListener(options: DualProtocolListenerOptions): DualProtocolListener {
  if (options.tls) return createTlsListener(options, options.tls);
  const sniffTimeoutMs = options.sniffTimeoutMs ?? 10_000;
  const sniffing = new Set<net.Socket>();
  const server = net.createServer({ noDelay: true }, (socket) => {
    sniffing.add(socket);
    const chunks: Buffer[] = [];
    let received = 0;
    // Until a server owns the socket, its errors (a reset mid-sniff) are ours to swallow: an unhandled
    // 'error' event would crash the process.
    const onError = (): void => {};
    const deadline = setTimeout(() => socket.destroy(), sniffTimeoutMs);
    const onClose = (): void => {
      clearTimeout(deadline);
      sniffing.delete(socket);
    };
    const handOver = (to: 'http1' | 'http2'): void => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      clearTimeout(deadline);
      sniffing.delete(socket);
      // Paused first: removing the 'data' listener alone leaves the socket flowing, and data arriving
      // before the new owner listens would be lost.
      socket.pause();
      socket.unshift(Buffer.concat(chunks, received));
      if (to === 'http2') {
        // The session reads what is buffered on the socket, then takes over its handle.
        options.http2.emit('connection', socket);
      } else {
        // node:http's own listener accepts half-open sockets so that a client that shuts down its side
        // after the request still gets the response; its socketOnEnd ends ours when due.
        socket.allowHalfOpen = true;
        options.http1.emit('connection', socket);
        // node:http reads the handle itself but leaves JS-buffered bytes to the stream: flow them out.
        socket.resume();
      }
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      received += chunk.length;
      const head = chunks.length === 1 ? chunk : Buffer.concat(chunks, received);
      const n = Math.min(received, HTTP2_PREFACE.length);
      if (!head.subarray(0, n).equals(HTTP2_PREFACE.subarray(0, n))) handOver('http1');
      else if (received >= HTTP2_PREFACE.length) handOver('http2');
    };
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.on('data', onData);
  });

  if (options.maxConnections !== undefined) server.maxConnections = options.maxConnections;

  return {
    server,
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sniffing) socket.destroy();
      return closed;
    },
  };
}

/**
 * The TLS variant: node's own `tls.Server` does the handshake (and the client-certificate check), then
 * each connection goes to `http2` when ALPN chose `h2` and to `http1` otherwise (`http/1.1` or a client
 * that offered no ALPN).
 */
function createTlsListener(options: DualProtocolListenerOptions, tlsOptions: tls.TlsOptions): DualProtocolListener {
  // Connections still in their handshake, by their TCP socket: close() drops them.
  const handshaking = new Set<net.Socket>();
  const server = tls.createServer({
    ...tlsOptions,
    ALPNProtocols: ['h2', 'http/1.1'],
    handshakeTimeout: options.sniffTimeoutMs ?? 10_000,
    noDelay: true,
  });
  if (options.maxConnections !== undefined) server.maxConnections = options.maxConnections;
  server.on('connection', (raw: net.Socket) => {
    handshaking.add(raw);
    raw.once('close', () => handshaking.delete(raw));
  });
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    // `_parent` is the TCP socket under a server-side TLSSocket (node's tls.Server wraps it so).
    const raw = (socket as unknown as { _parent?: net.Socket })._parent;
    if (raw) handshaking.delete(raw);
    if (socket.alpnProtocol === 'h2') {
      options.http2.emit('connection', socket);
    } else {
      socket.allowHalfOpen = true;
      options.http1.emit('connection', socket);
    }
  });
  // A failed handshake (wrong or missing client certificate, a client that does not trust us) is the
  // client's problem: node destroys the socket; without this listener it would log a warning each time.
  server.on('tlsClientError', () => {});
  return {
    server,
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of handshaking) socket.destroy();
      return closed;
    },
  };
}
