/** LDBOX_LOG_LEVEL (src/config/log-config.ts): pino's levels, `info` by default, anything else refused. */
import t from 'tap';
import { ConfigError } from '../../src/config/env-parsers.js';
import { LOG_LEVELS, loadLogLevel } from '../../src/config/log-config.js';

t.test('default and every level', async (t) => {
  t.equal(loadLogLevel({}), 'info');
  t.equal(loadLogLevel({ LDBOX_LOG_LEVEL: '' }), 'info', 'empty = unset');
  for (const level of LOG_LEVELS) t.equal(loadLogLevel({ LDBOX_LOG_LEVEL: level }), level);
});

t.test('an unknown level names the accepted ones', async (t) => {
  for (const bad of ['verbose', 'INFO', 'warning']) {
    t.throws(
      () => loadLogLevel({ LDBOX_LOG_LEVEL: bad }),
      new ConfigError(`LDBOX_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${bad}"`),
    );
  }
});
