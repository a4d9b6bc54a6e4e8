/**
 * The settings of the control-plane commands (`ldbox workflows …`, `ldbox executions …`): where the gateway
 * is (`LDBOX_URL`) and its admin token (`LDBOX_ADMIN_TOKEN`, the one the gateway checks). Read once, here,
 * with exact messages; a bad or missing value is a ConfigError (exit 2).
 *
 * Tests: test/cli/control-plane-cli.test.ts ("configuration").
 */
import { ConfigError, type Env, type TextSpec } from '../config/env-parsers.js';

/** The gateway's own default address (LDBOX_GATEWAY_HOST and LDBOX_GATEWAY_PORT unset). */
export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8080';

const S = {
  url: {
    kind: 'text',
    name: 'LDBOX_URL',
    shown: DEFAULT_GATEWAY_URL,
    meaning: 'the gateway whose control plane the command calls: http://host:port or https://host:port',
  },
  adminToken: {
    kind: 'text',
    name: 'LDBOX_ADMIN_TOKEN',
    shown: 'required',
    meaning: 'bearer token of the control plane, at least 16 characters, no whitespace (`ldbox dev` generates one)',
  },
} as const satisfies Record<string, TextSpec>;

/** The settings the control-plane commands read, for --help and the known-settings table. */
export const CONTROL_PLANE_CLIENT_SETTINGS: readonly TextSpec[] = [S.url, S.adminToken];

export interface ControlPlaneClientConfig {
  /** The gateway's base URL, without trailing slash. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  adminToken: string;
}

/** Reads and checks LDBOX_URL and LDBOX_ADMIN_TOKEN. */
export function loadControlPlaneClientConfig(env: Env): ControlPlaneClientConfig {
  const rawUrl = env[S.url.name] ?? '';
  const url = rawUrl === '' ? DEFAULT_GATEWAY_URL : rawUrl;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.search !== '' || parsed.hash !== '') {
    throw new ConfigError(`LDBOX_URL must be the gateway's http://host:port or https://host:port, got "${url}"`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new ConfigError('LDBOX_URL must not hold a user or password: the admin token goes in LDBOX_ADMIN_TOKEN');
  }
  const adminToken = env[S.adminToken.name] ?? '';
  if (adminToken === '') {
    throw new ConfigError("LDBOX_ADMIN_TOKEN is required: the gateway's admin token (`ldbox dev` writes it to .ldbox/admin-token)");
  }
  if (adminToken.length < 16) throw new ConfigError('LDBOX_ADMIN_TOKEN must be at least 16 characters long');
  if (/\s/.test(adminToken)) throw new ConfigError('LDBOX_ADMIN_TOKEN must not contain whitespace');
  return { url: url.replace(/\/+$/, ''), adminToken };
}
