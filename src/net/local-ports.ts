/**
 * Loopback ports: picking a free one, checking one, and whether a nats-server answers on one (it sends an
 * `INFO` line first on every connection). Used by `ldbox dev`, the nats-server launcher and tests.
 */
import { connect as netConnect, createServer } from 'node:net';

/** A free port on 127.0.0.1 chosen by the kernel (bind to 0, read, close). */
export function anyFreePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      srv.close(() => res(port));
    });
  });
}

/** True when nothing listens on 127.0.0.1:`port`. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
}

/** True when something on 127.0.0.1:`port` sends a NATS `INFO` line within 500 ms. */
export function answersNatsInfo(port: number): Promise<boolean> {
  return new Promise((res) => {
    const sock = netConnect({ host: '127.0.0.1', port });
    let buf = '';
    const done = (v: boolean) => {
      sock.destroy();
      res(v);
    };
    sock.setTimeout(500, () => done(false));
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      if (buf.startsWith('INFO ')) done(true);
    });
    sock.on('error', () => done(false));
    sock.on('close', () => done(false));
  });
}
