/**
 * The data keys that encrypt stored secrets (README "Security → Encryption at rest"), read by every role
 * that reads or writes workflows: the gateway, the executor and `ldbox reencrypt`.
 *
 * - `LDBOX_DATA_KEY`: the base64 of 32 random bytes (`openssl rand -base64 32`), or `LDBOX_DATA_KEY_FILE`:
 *   a file holding it. Exactly one is required. New writes are sealed with it.
 * - `LDBOX_DATA_KEY_OLD` (comma-separated) and/or `LDBOX_DATA_KEY_OLD_FILE` (one key a line; blank lines and
 *   `#` comments ignored): earlier keys, still accepted for reading while `ldbox reencrypt` moves the stored
 *   secrets to the current key.
 *
 * Messages never contain key material: a bad value is described, never echoed.
 *
 * Tests: test/config/data-key-config.test.ts.
 */
import { readFileSync } from 'node:fs';
import { DATA_KEY_BYTES, dataKey, type DataKey, KeyRing } from '../crypto/secret-box.js';
import { ConfigError, type Env, type SettingSpec } from './env-parsers.js';

const S = {
  key: {
    kind: 'text',
    name: 'LDBOX_DATA_KEY',
    shown: 'required',
    meaning: 'base64 of 32 random bytes that encrypts stored secrets (node auth); or LDBOX_DATA_KEY_FILE',
  },
  keyFile: { kind: 'text', name: 'LDBOX_DATA_KEY_FILE', shown: 'unset', meaning: 'a file holding LDBOX_DATA_KEY (`ldbox dev` generates one in its data dir)' },
  old: {
    kind: 'text',
    name: 'LDBOX_DATA_KEY_OLD',
    shown: 'unset',
    meaning: 'earlier data keys, base64, comma-separated: still read, never written (rotation)',
  },
  oldFile: { kind: 'text', name: 'LDBOX_DATA_KEY_OLD_FILE', shown: 'unset', meaning: 'a file of earlier data keys, one a line (# comments)' },
} as const satisfies Record<string, SettingSpec>;

/** The data-key settings, for `--help` and the unknown-variable warning. */
export const DATA_KEY_SETTINGS: readonly SettingSpec[] = Object.values(S);

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** One key from its base64 text; `what` names where it came from in messages. */
function parseKey(text: string, what: string): DataKey {
  const s = text.trim();
  if (s === '') throw new ConfigError(`${what} is empty: expected the base64 of ${DATA_KEY_BYTES} bytes (openssl rand -base64 32)`);
  if (!BASE64.test(s) || s.length % 4 !== 0) {
    throw new ConfigError(
      `${what} is not valid base64 (A-Z a-z 0-9 + / with = padding): expected the base64 of ${DATA_KEY_BYTES} bytes (openssl rand -base64 32)`,
    );
  }
  const bytes = Buffer.from(s, 'base64');
  if (bytes.length !== DATA_KEY_BYTES) throw new ConfigError(`${what} must be the base64 of ${DATA_KEY_BYTES} bytes, got ${bytes.length} bytes`);
  return dataKey(bytes);
}

function readKeyFile(env: Env, name: string): string {
  const path = env[name]!;
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${name}: cannot read "${path}" (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

const set = (env: Env, name: string): boolean => env[name] !== undefined && env[name]!.trim() !== '';

/** Reads the data keys; throws a ConfigError with an exact message when they are missing or bad. */
export function loadDataKeys(env: Env): KeyRing {
  const inline = set(env, S.key.name);
  const file = set(env, S.keyFile.name);
  if (inline && file) throw new ConfigError('LDBOX_DATA_KEY and LDBOX_DATA_KEY_FILE are both set: set one of them');
  if (!inline && !file) {
    throw new ConfigError(
      'LDBOX_DATA_KEY (or LDBOX_DATA_KEY_FILE) is required: the base64 of 32 random bytes that encrypts stored secrets (generate one with: openssl rand -base64 32)',
    );
  }
  const current = inline ? parseKey(env[S.key.name]!, S.key.name) : parseKey(readKeyFile(env, S.keyFile.name), `${S.keyFile.name} "${env[S.keyFile.name]}"`);
  const old: DataKey[] = [];
  if (set(env, S.old.name)) {
    env[S.old.name]!.split(',').forEach((part, i) => {
      if (part.trim() !== '') old.push(parseKey(part, `${S.old.name} (key ${i + 1})`));
    });
  }
  if (set(env, S.oldFile.name)) {
    readKeyFile(env, S.oldFile.name)
      .split('\n')
      .forEach((line, i) => {
        const l = line.trim();
        if (l !== '' && !l.startsWith('#')) old.push(parseKey(l, `${S.oldFile.name} "${env[S.oldFile.name]}" line ${i + 1}`));
      });
  }
  return new KeyRing(current, old);
}
