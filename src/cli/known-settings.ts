/**
 * The settings of each command, collected from the config modules (each role's module is the one place
 * that names its settings; the composition root takes a role's list through the role's index.ts), and the
 * warning about `LDBOX_*` variables that are none of them.
 *
 * Tests: test/config/known-settings.test.ts, test/cli/unknown-settings.test.ts.
 */
import { DEV_SETTINGS } from '../dev/dev-config.js';
import type { Env, SettingSpec } from '../config/env-parsers.js';
import { NATS_SETTINGS } from '../config/nats-config.js';
import { DATA_KEY_SETTINGS } from '../config/data-key-config.js';
import { EXECUTOR_SETTINGS } from '../executor/executor-config.js';
import { GATEWAY_SETTINGS } from '../../gateway/gateway-config.js';
import { LOG_SETTINGS } from '../config/log-config.js';
import { RUNNER_SETTINGS } from '../../runner/config/index.js';
import { CONTROL_PLANE_CLIENT_SETTINGS } from './control-plane-config.js';

export type Command = 'runner' | 'gateway' | 'executor' | 'dev' | 'run' | 'check' | 'reencrypt';

/** Each name once, first occurrence first. */
function union(...lists: ReadonlyArray<readonly SettingSpec[]>): readonly SettingSpec[] {
  const seen = new Map<string, SettingSpec>();
  for (const list of lists) for (const s of list) if (!seen.has(s.name)) seen.set(s.name, s);
  return [...seen.values()];
}

/** The commands on a running gateway's control plane (src/cli/control-plane-commands.ts). */
export type ControlPlaneCommand = 'workflows' | 'executions';

/** The settings each command reads. `run` runs the runner's pool, so it reads the runner's settings. */
export const COMMAND_SETTINGS: Readonly<Record<Command | ControlPlaneCommand, readonly SettingSpec[]>> = {
  runner: union(RUNNER_SETTINGS, LOG_SETTINGS),
  gateway: union(GATEWAY_SETTINGS, LOG_SETTINGS),
  executor: union(EXECUTOR_SETTINGS, LOG_SETTINGS),
  dev: union(DEV_SETTINGS, GATEWAY_SETTINGS, EXECUTOR_SETTINGS, RUNNER_SETTINGS, LOG_SETTINGS),
  run: RUNNER_SETTINGS,
  // `check` refuses code larger than the runner would take.
  check: RUNNER_SETTINGS.filter((s) => s.name === 'LDBOX_MAX_CODE_BYTES'),
  reencrypt: [...NATS_SETTINGS, ...DATA_KEY_SETTINGS],
  workflows: CONTROL_PLANE_CLIENT_SETTINGS,
  executions: CONTROL_PLANE_CLIENT_SETTINGS,
};

/** Every setting name of every command. */
export const KNOWN_SETTING_NAMES: ReadonlySet<string> = new Set(Object.values(COMMAND_SETTINGS).flatMap((list) => list.map((s) => s.name)));

/** Variables the test suite reads (never the product): not warned about. */
const TEST_PREFIX = 'LDBOX_TEST_';

/** Levenshtein distance (insertions, deletions, substitutions). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** The known name nearest to `name` when it is near enough to be a typo (at most 3 edits), else undefined. */
export function nearestSetting(name: string): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const known of KNOWN_SETTING_NAMES) {
    const d = editDistance(name.toUpperCase(), known);
    if (d < bestDistance) [best, bestDistance] = [known, d];
  }
  return bestDistance <= 3 ? best : undefined;
}

/**
 * One warning line (without newline) per `LDBOX_*` variable of `env` that no command reads, in name order:
 * `LDBOX_POOL_SIZ is not a setting; did you mean LDBOX_POOL_SIZE?`.
 */
export function unknownSettingWarnings(env: Env): string[] {
  return Object.keys(env)
    .filter((k) => k.toUpperCase().startsWith('LDBOX_') && !k.startsWith(TEST_PREFIX) && !KNOWN_SETTING_NAMES.has(k))
    .sort()
    .map((k) => {
      const near = nearestSetting(k);
      return near ? `${k} is not a setting; did you mean ${near}?` : `${k} is not a setting (ldbox <command> --help lists them)`;
    });
}
