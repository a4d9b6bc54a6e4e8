/**
 * The nats-server that `ldbox dev` runs for one machine (started by the shared launcher,
 * src/nats/nats-server-process.ts): JetStream on, file storage in `<dir>/jetstream`, loopback only,
 * `max_payload: 8MB` so that the gateway's default 5 MiB body limit fits (the server's default 1 MB would
 * not), its log in `<dir>/nats-server.log`. It takes only clients that log in with the user and password it
 * is given (`ldbox dev` keeps a generated one): even on loopback, another local user or a browser-borne
 * request must not get an open NATS. The config file holds the password: mode 0600.
 */
import { join } from 'node:path';
import type { NatsSettings } from '../nats/connection-options.js';
import { startNatsServerProcess } from '../nats/nats-server-process.js';

/** The one user of the local nats-server. */
export interface LocalNatsUser {
  user: string;
  password: string;
}

export interface LocalNats {
  /** `nats://127.0.0.1:<port>`, without credentials. */
  url: string;
  port: number;
  /** How the roles connect to it: the URL and the user and password. */
  settings: NatsSettings;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves once the process is gone. */
  stop(timeoutMs?: number): Promise<void>;
  /** Resolves when the process exits (for whatever reason) with its exit code or signal. */
  readonly exited: Promise<string>;
}

/**
 * Starts nats-server on 127.0.0.1:`port` (-1: a port the server picks) with its data in `dir`, taking only
 * `auth`'s user; resolves once it answers. A server that an earlier run left behind (`kill -9` of
 * `ldbox dev`) on the same data dir is stopped first: its pid file says which.
 */
export async function startLocalNats(bin: string, dir: string, port: number, auth: LocalNatsUser, maxPayloadBytes = 8 * 1024 * 1024): Promise<LocalNats> {
  const server = await startNatsServerProcess({
    bin,
    dir,
    storeDir: join(dir, 'jetstream'),
    port,
    config: { comment: 'Written by `ldbox dev` on every start; edit LDBOX_* settings instead.', maxPayload: maxPayloadBytes, auth },
    logFile: join(dir, 'nats-server.log'),
    pidFile: join(dir, 'nats-server.pid'),
    // Its own process group: Ctrl-C in a terminal signals the whole foreground group, and nats-server
    // must stop last, after the roles that use it, not at the same time.
    detached: true,
    startTimeoutMs: 15_000,
  });
  return {
    url: server.url,
    port: server.port,
    settings: { servers: [`127.0.0.1:${server.port}`], shown: server.url, user: auth.user, pass: auth.password },
    exited: server.exited,
    stop: (timeoutMs) => server.stop(timeoutMs),
  };
}
