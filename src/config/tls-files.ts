/**
 * PEM files named by TLS settings (the runner's certificate and key, a CA, a client certificate), read
 * and checked once at start so that a wrong file stops the process with an exact message (exit 2)
 * instead of failing every handshake later. The checks use Node's own parsers
 * (`X509Certificate`, `createPrivateKey`, `tls.createSecureContext`).
 *
 * Tests: test/config/tls-settings.test.ts.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { ConfigError, type Env } from './env-parsers.js';

/** A certificate (chain) and its private key, PEM. */
export interface PemKeyPair {
  cert: Buffer;
  key: Buffer;
}

/** The path a setting names, or undefined when it is unset or blank. */
export function pathSetting(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

/** The bytes of the file `name` points at. */
function readSettingFile(name: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`${name}: cannot read "${path}" (${code})`);
  }
}

/** The PEM certificate(s) in the file `name` points at, or undefined when the setting is unset. */
export function certificateSetting(env: Env, name: string): Buffer | undefined {
  const path = pathSetting(env, name);
  if (path === undefined) return undefined;
  const pem = readSettingFile(name, path);
  certificateOf(name, path, pem);
  return pem;
}

function certificateOf(name: string, path: string, pem: Buffer): X509Certificate {
  try {
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate');
    return new X509Certificate(pem);
  } catch {
    throw new ConfigError(`${name}: "${path}" holds no PEM certificate`);
  }
}

/**
 * A certificate and its key, named by two settings that go together: both or neither (undefined). The
 * key must be unencrypted PEM and belong to the (first) certificate of the file.
 */
export function keyPairSetting(env: Env, certName: string, keyName: string): PemKeyPair | undefined {
  const certPath = pathSetting(env, certName);
  const keyPath = pathSetting(env, keyName);
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (certPath === undefined || keyPath === undefined) {
    throw new ConfigError(`${certName} and ${keyName} go together: set both (PEM files) or neither`);
  }
  const cert = readSettingFile(certName, certPath);
  const key = readSettingFile(keyName, keyPath);
  const x509 = certificateOf(certName, certPath, cert);
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new ConfigError(`${keyName}: "${keyPath}" holds no unencrypted PEM private key`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new ConfigError(`${keyName}: the key in "${keyPath}" does not belong to the certificate in "${certPath}" (${certName})`);
  }
  // The last word is OpenSSL's: whatever it refuses here it would refuse on every connection.
  try {
    tls.createSecureContext({ cert, key });
  } catch (err) {
    throw new ConfigError(`${certName} and ${keyName}: OpenSSL refuses "${certPath}" with "${keyPath}": ${(err as Error).message}`);
  }
  return { cert, key };
}
