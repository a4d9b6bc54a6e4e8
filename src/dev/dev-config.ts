/**
 * The settings only `ldbox dev` reads (where it keeps its data, the port of its nats-server). The roles it
 * starts read their own modules' settings as usual.
 *
 * Tests: test/config/dev-config.test.ts.
 */
import { type Env, intSetting, type SettingSpec, stringSetting } from '../config/env-parsers.js';

const S = {
  dataDir: { kind: 'text', name: 'LDBOX_DATA_DIR', shown: '.ldbox', meaning: 'where `ldbox dev` keeps NATS data and the generated tokens' },
  natsPort: {
    kind: 'int',
    name: 'LDBOX_NATS_PORT',
    fallback: 4222,
    min: 0,
    max: 65535,
    meaning: 'port of the local nats-server (0 = any free port; another one when 4222 is taken and this is unset)',
  },
} as const satisfies Record<string, SettingSpec>;

/** The settings of `ldbox dev` itself. */
export const DEV_SETTINGS: readonly SettingSpec[] = Object.values(S);

export interface DevConfig {
  /** As given (resolve it against the working directory). */
  dataDir: string;
  natsPort: number;
  /** True when LDBOX_NATS_PORT was set: then a taken port is an error, not a reason to pick another. */
  natsPortAsked: boolean;
}

export function loadDevConfig(env: Env): DevConfig {
  return {
    dataDir: stringSetting(env, S.dataDir.name, S.dataDir.shown),
    natsPort: intSetting(env, S.natsPort),
    natsPortAsked: (env[S.natsPort.name] ?? '').trim() !== '',
  };
}
