/**
 * The one place that turns validated NATS settings into nats.js `ConnectionOptions`: the servers, the
 * credentials (user/password, token, a `.creds` file, an NKEY seed) and TLS. Every role connects through
 * {@link natsConnectionOptions} (via `connectNats`), so a secured NATS works the same for all of them.
 *
 * Credentials never leave this object except into nats.js: {@link NatsSettings.shown} is what logs and
 * messages print (passwords in URLs as `***`). Tests: test/nats/nats-auth.test.ts.
 */
import { readFileSync } from 'node:fs';
import { credsAuthenticator, nkeyAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';

/** Where NATS is and how to authenticate, as read from NATS_* (src/config/nats-config.ts). */
export interface NatsSettings {
  /** Seed servers, `host:port` (no scheme, no credentials). */
  servers: string[];
  /** The servers for logs and messages: credentials replaced by `***`. */
  shown: string;
  /** From `nats://user:password@host`. */
  user?: string;
  pass?: string;
  /** NATS_TOKEN. */
  token?: string;
  /** NATS_CREDS: path of a `.creds` file (user JWT + NKEY seed), read at each connect. */
  credsFile?: string;
  /** NATS_NKEY_SEED_FILE: path of a file holding an NKEY seed, read at each connect. */
  nkeySeedFile?: string;
  /** Set: TLS is required (`tls://` or a CA/client certificate). Unset: TLS only if the server offers it. */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
}

/** Settings from a bare URL (tests, tools): one server, no credentials. */
export function natsSettingsOf(url: string): NatsSettings {
  return { servers: [url], shown: url };
}

/** The nats.js options for `settings` (servers, auth, TLS); the caller adds its timing options. */
export function natsConnectionOptions(settings: NatsSettings): ConnectionOptions {
  const o: ConnectionOptions = { servers: [...settings.servers] };
  if (settings.user !== undefined) {
    o.user = settings.user;
    o.pass = settings.pass ?? '';
  }
  if (settings.token !== undefined) o.token = settings.token;
  if (settings.credsFile !== undefined) {
    const file = settings.credsFile;
    // A function: the file is read at every (re)connect, so rotated credentials need no restart.
    o.authenticator = credsAuthenticator(() => readFileSync(file));
  }
  if (settings.nkeySeedFile !== undefined) {
    const file = settings.nkeySeedFile;
    o.authenticator = nkeyAuthenticator(() => new TextEncoder().encode(readFileSync(file, 'utf8').trim()));
  }
  if (settings.tls) {
    const tls: NonNullable<ConnectionOptions['tls']> = {};
    if (settings.tls.caFile) tls.caFile = settings.tls.caFile;
    if (settings.tls.certFile) tls.certFile = settings.tls.certFile;
    if (settings.tls.keyFile) tls.keyFile = settings.tls.keyFile;
    o.tls = tls;
  }
  return o;
}
