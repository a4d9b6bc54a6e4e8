/**
 * The settings table collected from the config modules (src/cli/known-settings.ts): every name a
 * loader reads is in it, and unknown LDBOX_* variables get a warning with the nearest name.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { shownDefault } from '../../src/config/env-parsers.js';
import { loadDevConfig } from '../../src/dev/dev-config.js';
import { loadExecutorConfig } from '../../src/executor/executor-config.js';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { COMMAND_SETTINGS, editDistance, KNOWN_SETTING_NAMES, unknownSettingWarnings } from '../../src/cli/known-settings.js';
import { loadLogLevel } from '../../src/config/log-config.js';
import { loadRunnerConfig } from '../../runner/config/runner-config.js';

/** The names a loader reads from `env`, seen through a Proxy. */
function namesRead(load: (env: Record<string, string | undefined>) => unknown, base: Record<string, string> = {}): Set<string> {
  const read = new Set<string>();
  const env = new Proxy(base, {
    get(target, key) {
      if (typeof key === 'string') read.add(key);
      return target[key as string];
    },
  });
  load(env);
  return read;
}

t.test("every name a loader reads is in its command's table", async (t) => {
  const names = (cmd: keyof typeof COMMAND_SETTINGS) => new Set(COMMAND_SETTINGS[cmd].map((s) => s.name));
  for (const n of namesRead(loadRunnerConfig)) t.ok(names('runner').has(n), `runner reads ${n}`);
  for (const n of namesRead(loadExecutorConfig, { LDBOX_DATA_KEY: Buffer.alloc(32).toString('base64') })) t.ok(names('executor').has(n), `executor reads ${n}`);
  for (const n of namesRead(loadGatewayConfig, { LDBOX_ADMIN_TOKEN: 'x'.repeat(16), LDBOX_DATA_KEY: Buffer.alloc(32).toString('base64') }))
    t.ok(names('gateway').has(n), `gateway reads ${n}`);
  for (const n of namesRead(loadDevConfig)) t.ok(names('dev').has(n), `dev reads ${n}`);
  for (const n of namesRead(loadLogLevel)) t.ok(names('runner').has(n) && names('gateway').has(n) && names('executor').has(n), `every role reads ${n}`);
  t.equal(namesRead(loadRunnerConfig).size, COMMAND_SETTINGS.runner.length - 1, 'the runner table has nothing its loader does not read (but the log level)');
});

t.test('every setting is in the README with its default', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  for (const name of KNOWN_SETTING_NAMES) {
    const row = readme.split('\n').find((l) => l.startsWith(`| \`${name}\``));
    const spec = Object.values(COMMAND_SETTINGS)
      .flat()
      .find((s) => s.name === name)!;
    t.ok(row, `README has a row for ${name}`);
    t.match(row ?? '', `| \`${shownDefault(spec)}\` |`, `README's default of ${name}`);
  }
});

t.test('edit distance', async (t) => {
  t.equal(editDistance('', 'abc'), 3);
  t.equal(editDistance('LDBOX_POOL_SIZ', 'LDBOX_POOL_SIZE'), 1);
  t.equal(editDistance('kitten', 'sitting'), 3);
});

t.test('unknown LDBOX_* variables, with the nearest name', async (t) => {
  t.same(
    unknownSettingWarnings({
      LDBOX_POOL_SIZ: '2',
      LDBOX_RUNER_URLS: 'x',
      LDBOX_log_level: 'debug',
      LDBOX_SOMETHING_ELSE_ENTIRELY: '1',
      LDBOX_POOL_SIZE: '2',
      LDBOX_TEST_LOG: 'debug',
      NATS_URL: 'nats://x',
      PATH: '/bin',
    }),
    [
      'LDBOX_POOL_SIZ is not a setting; did you mean LDBOX_POOL_SIZE?',
      'LDBOX_RUNER_URLS is not a setting; did you mean LDBOX_RUNNER_URLS?',
      'LDBOX_SOMETHING_ELSE_ENTIRELY is not a setting (ldbox <command> --help lists them)',
      'LDBOX_log_level is not a setting; did you mean LDBOX_LOG_LEVEL?',
    ],
  );
  t.same(unknownSettingWarnings({ LDBOX_GATEWAY_PORT: '1', LDBOX_DATA_DIR: 'x', LDBOX_MAX_TIMEOUT_MS: '1' }), [], 'settings of any role are known');
});
