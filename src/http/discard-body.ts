import type http from 'node:http';

/**
 * Reads and drops what is left of a request body, up to `maxBytes` more bytes. Resolves true once the
 * body ended (the connection can answer and stay open), false when it passed `maxBytes`, was aborted or
 * its connection closed (answer with `connection: close`; the socket is destroyed after the answer).
 *
 * Why: answering an oversized or refused upload and closing while the client still sends makes clients
 * that write the whole body before reading (Node's fetch/undici) fail with EPIPE instead of seeing the
 * status; a bounded discard lets them read it without letting anyone stream gigabytes into the server.
 * Test: test/gateway/transport-limits.test.ts.
 */
export function discardBody(req: http.IncomingMessage, maxBytes: number): Promise<boolean> {
  if (req.complete || req.readableEnded) return Promise.resolve(true);
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > maxBytes) return Promise.resolve(false);
  return new Promise((resolve) => {
    let read = 0;
    const done = (ended: boolean): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onClose);
      if (!ended) req.pause();
      resolve(ended);
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > maxBytes) done(false);
    };
    const onEnd = (): void => done(true);
    const onClose = (): void => done(req.complete);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.once('error', onClose);
    req.resume();
  });
}

/**
 * Sends an answer to a request whose body was not (fully) read: the rest is discarded first (up to
 * `maxBytes`), so the client sees the status; past that the answer says `connection: close` and the
 * connection ends once it is written.
 */
export async function answerAfterDiscard(req: http.IncomingMessage, res: http.ServerResponse, maxBytes: number, answer: () => void): Promise<void> {
  const ended = await discardBody(req, maxBytes);
  if (res.headersSent || res.destroyed) return;
  if (!ended) {
    res.setHeader('connection', 'close');
    res.once('finish', () => req.socket.destroySoon());
  }
  answer();
}

/**
 * Answers at once (a refusal that must not wait for the body, e.g. a missing token), then discards the
 * rest of the body up to `maxBytes`; past that, or for a larger declared length, the connection is closed
 * once the answer is written.
 */
export function answerThenDiscard(req: http.IncomingMessage, res: http.ServerResponse, maxBytes: number, answer: () => void): void {
  const discarded = discardBody(req, maxBytes);
  answer();
  void discarded.then((ended) => {
    if (ended) return;
    if (res.writableFinished) req.socket.destroySoon();
    else res.once('finish', () => req.socket.destroySoon());
  });
}
