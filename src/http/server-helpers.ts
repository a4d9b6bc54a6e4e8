/** Small pieces every role's HTTP server shares. */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on `host:port` and resolves with the bound port. When the port cannot be taken, `undo` runs
 * first (stop what the role started before listening, e.g. its NATS connection, so the process can exit
 * with the error) and the listen error is rethrown.
 */
export async function listenOrUndo(server: http.Server, port: number, host: string, undo: () => Promise<void>): Promise<number> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await undo();
    throw err;
  }
  return (server.address() as AddressInfo).port;
}
