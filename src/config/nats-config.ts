/**
 * The NATS settings of every role that talks to NATS (gateway, executor, `ldbox dev` when NATS_URL is set):
 * a seed list of servers, one way of authenticating, TLS. Validated once with exact messages; no message
 * ever contains a credential (a password in a URL is shown as `***`, tokens and seeds are never shown).
 * The result is turned into nats.js options by src/nats/connection-options.ts, nowhere else.
 *
 * Tests: test/config/nats-config.test.ts.
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import type { NatsSettings } from '../nats/connection-options.js';
import { ConfigError, type Env, stringSetting, type TextSpec } from './env-parsers.js';

/** NATS_URL, read by the gateway and the executor. */
export const NATS_URL: TextSpec = {
  kind: 'text',
  name: 'NATS_URL',
  shown: 'nats://127.0.0.1:4222',
  meaning:
    'the NATS servers, comma-separated: nats://host:port, tls://host:port or host:port; nats://user:password@host:port for a password (`ldbox dev` starts one unless set)',
};

const S = {
  url: NATS_URL,
  token: { kind: 'text', name: 'NATS_TOKEN', shown: 'unset', meaning: 'NATS authentication token' },
  creds: { kind: 'text', name: 'NATS_CREDS', shown: 'unset', meaning: 'path of a NATS .creds file (user JWT and NKEY seed)' },
  nkey: { kind: 'text', name: 'NATS_NKEY_SEED_FILE', shown: 'unset', meaning: 'path of a file holding a NATS NKEY seed (SU…)' },
  ca: {
    kind: 'text',
    name: 'NATS_CA',
    shown: 'unset',
    meaning: 'path of the PEM CA certificate(s) the NATS server certificate is checked against (turns TLS on)',
  },
  cert: { kind: 'text', name: 'NATS_CERT', shown: 'unset', meaning: 'path of the PEM client certificate for NATS (with NATS_KEY; turns TLS on)' },
  key: { kind: 'text', name: 'NATS_KEY', shown: 'unset', meaning: 'path of the PEM private key of NATS_CERT' },
} as const satisfies Record<string, TextSpec>;

/** Every NATS setting, for the tables of the roles that connect to NATS. */
export const NATS_SETTINGS: readonly TextSpec[] = Object.values(S);

/**
 * A URL (or anything meant as one) for a message: whatever precedes the last `@` after the scheme is
 * replaced by `***`, so a password is not echoed even when the URL is malformed.
 */
export function redactUrl(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)?.*@/i, (_, scheme: string | undefined) => `${scheme ?? ''}***@`);
}

const SERVER = /^(?:([a-z]+):\/\/)?(?:(.*)@)?([A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;

interface Parsed {
  hostPort: string;
  tls: boolean;
  user?: string;
  pass?: string;
}

function parseServer(entry: string): Parsed {
  const shown = redactUrl(entry);
  const m = SERVER.exec(entry);
  const [, scheme, userinfo, host, port] = m ?? [];
  if (!m || (scheme !== undefined && scheme !== 'nats' && scheme !== 'tls') || host === undefined) {
    throw new ConfigError(`NATS_URL must be nats://host:port, tls://host:port or host:port (comma-separated), got "${shown}"`);
  }
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) throw new ConfigError(`NATS_URL: the port of "${shown}" must be from 1 to 65535`);
  const parsed: Parsed = { hostPort: port === undefined ? host : `${host}:${port}`, tls: scheme === 'tls' };
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    if (colon <= 0) throw new ConfigError(`NATS_URL: "${shown}" must give its credentials as user:password (a token goes in NATS_TOKEN)`);
    try {
      parsed.user = decodeURIComponent(userinfo.slice(0, colon));
      parsed.pass = decodeURIComponent(userinfo.slice(colon + 1));
    } catch {
      throw new ConfigError(`NATS_URL: the credentials of "${shown}" are not valid percent-encoding`);
    }
  }
  return parsed;
}

/** A path setting: undefined when unset, else a readable regular file (checked now, read at connect). */
function fileSetting(env: Env, spec: TextSpec): string | undefined {
  const path = env[spec.name];
  if (path === undefined || path.trim() === '') return undefined;
  try {
    if (!statSync(path).isFile()) throw Object.assign(new Error('not a file'), { code: 'not a regular file' });
    accessSync(path, constants.R_OK);
  } catch (err) {
    throw new ConfigError(`${spec.name} must be a readable file, got "${path}" (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
  }
  return path;
}

function mustContain(spec: TextSpec, path: string, test: (text: string) => boolean, what: string): void {
  // The content is a secret (a seed, a key): the message names the file and what it lacks, never the text.
  if (!test(readFileSync(path, 'utf8'))) throw new ConfigError(`${spec.name}: "${path}" is not ${what}`);
}

/** Reads and checks NATS_URL and the NATS credential and TLS settings; throws a ConfigError on a bad value. */
export function loadNatsSettings(env: Env): NatsSettings {
  const raw = stringSetting(env, S.url.name, S.url.shown);
  const entries = raw.split(',').map((s) => s.trim());
  if (entries.some((e) => e === '')) throw new ConfigError('NATS_URL must not have an empty entry (servers are comma-separated)');
  const parsed = entries.map(parseServer);

  const withCreds = parsed.filter((p) => p.user !== undefined);
  if (withCreds.some((p) => p.user !== withCreds[0]!.user || p.pass !== withCreds[0]!.pass)) {
    throw new ConfigError('NATS_URL: every server that names credentials must name the same user:password');
  }
  const token = env[S.token.name] || undefined;
  if (token !== undefined && /\s/.test(token)) throw new ConfigError('NATS_TOKEN must not contain whitespace');
  const credsFile = fileSetting(env, S.creds);
  const nkeySeedFile = fileSetting(env, S.nkey);
  const ways = [
    withCreds.length > 0 ? 'a user:password in NATS_URL' : undefined,
    token !== undefined ? 'NATS_TOKEN' : undefined,
    credsFile !== undefined ? 'NATS_CREDS' : undefined,
    nkeySeedFile !== undefined ? 'NATS_NKEY_SEED_FILE' : undefined,
  ].filter((w): w is string => w !== undefined);
  if (ways.length > 1) throw new ConfigError(`NATS takes one way of authenticating, got ${ways.join(' and ')}`);
  if (credsFile)
    mustContain(
      S.creds,
      credsFile,
      (t) => t.includes('BEGIN NATS USER JWT') && t.includes('BEGIN USER NKEY SEED'),
      'a .creds file (a user JWT and an NKEY seed)',
    );
  if (nkeySeedFile) mustContain(S.nkey, nkeySeedFile, (t) => /^SU[A-Z2-7]{56}$/.test(t.trim()), 'an NKEY user seed (one line, SU…)');

  const caFile = fileSetting(env, S.ca);
  const certFile = fileSetting(env, S.cert);
  const keyFile = fileSetting(env, S.key);
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError(`NATS_CERT and NATS_KEY go together: ${certFile === undefined ? 'NATS_CERT' : 'NATS_KEY'} is not set`);
  }
  const pem = (t: string) => t.includes('-----BEGIN ');
  if (caFile) mustContain(S.ca, caFile, pem, 'a PEM file');
  if (certFile) mustContain(S.cert, certFile, pem, 'a PEM file');
  if (keyFile) mustContain(S.key, keyFile, pem, 'a PEM file');

  const settings: NatsSettings = { servers: parsed.map((p) => p.hostPort), shown: entries.map(redactUrl).join(',') };
  if (withCreds.length > 0) {
    settings.user = withCreds[0]!.user!;
    settings.pass = withCreds[0]!.pass!;
  }
  if (token !== undefined) settings.token = token;
  if (credsFile !== undefined) settings.credsFile = credsFile;
  if (nkeySeedFile !== undefined) settings.nkeySeedFile = nkeySeedFile;
  if (parsed.some((p) => p.tls) || caFile || certFile) {
    settings.tls = {};
    if (caFile) settings.tls.caFile = caFile;
    if (certFile) settings.tls.certFile = certFile;
    if (keyFile) settings.tls.keyFile = keyFile;
  }
  return settings;
}
