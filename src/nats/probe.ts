/**
 * Whether a nats-server answers on a port: it sends an `INFO` line first on every connection. Used while
 * waiting for a freshly started server (ldbox dev, the tests' and benchmarks' servers).
 */
import { connect as netConnect } from 'node:net';

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
