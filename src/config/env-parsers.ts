/**
 * Parsers for environment settings. Each rule fails with an exact message naming the variable and the
 * value it got, so a misconfigured deployment says what to fix instead of starting with a surprise.
 */

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export type Env = Readonly<Record<string, string | undefined>>;

export function intSetting(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  if (n < min || n > max) throw new ConfigError(`${name} must be from ${min} to ${max}, got ${n}`);
  return n;
}

export function stringSetting(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

export function optionalSecret(env: Env, name: string, minLength: number): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < minLength) throw new ConfigError(`${name} must be at least ${minLength} characters long`);
  return raw;
}

export function hostSetting(env: Env, name: string, fallback: string): string {
  const raw = stringSetting(env, name, fallback);
  if (!/^[A-Za-z0-9.:\-[\]]+$/.test(raw)) throw new ConfigError(`${name} must be a host name or IP address, got "${raw}"`);
  return raw;
}

/** A comma-separated list; blanks are ignored. */
export function listSetting(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined) return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * NATS_URL: `nats://host:port` or `host:port` (the port may be left out: 4222), one server. A host is a
 * name, an IPv4 address or a bracketed IPv6 address.
 */
export function natsUrlSetting(env: Env): string {
  const raw = stringSetting(env, 'NATS_URL', 'nats://127.0.0.1:4222');
  if (!/^(nats:\/\/)?([A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/.test(raw)) {
    throw new ConfigError(`NATS_URL must be nats://host:port (or host:port), got "${raw}"`);
  }
  return raw;
}

/** A URL for a message: the user name and password (if any) replaced, so a secret in it is not echoed. */
export function withoutCredentials(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1***@');
}
