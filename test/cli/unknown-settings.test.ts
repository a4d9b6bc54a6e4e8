/** Unknown LDBOX_* variables: one warning line each on stderr at start, with the nearest setting name. */
import t from 'tap';
import { ldbox } from '../helpers/ldbox-cli.js';

t.test('a typo is warned about with the nearest name, before anything else', async (t) => {
  // A bad port too, so the runner stops right after the warnings (exit 2) instead of serving.
  const r = await ldbox(['runner'], { LDBOX_POOL_SIZ: '2', LDBOX_RUNER_HOST: '0.0.0.0', LDBOX_FROBNICATE_EVERYTHING: '1', LDBOX_RUNNER_PORT: 'x' });
  t.equal(r.code, 2);
  t.equal(
    r.stderr,
    [
      'warning: LDBOX_FROBNICATE_EVERYTHING is not a setting (ldbox <command> --help lists them)',
      'warning: LDBOX_POOL_SIZ is not a setting; did you mean LDBOX_POOL_SIZE?',
      'warning: LDBOX_RUNER_HOST is not a setting; did you mean LDBOX_RUNNER_HOST?',
      'configuration error: LDBOX_RUNNER_PORT must be a whole number from 0 to 65535, got "x"',
      '',
    ].join('\n'),
  );
});

t.test('settings of another role are not warned about; `ldbox run` warns too', async (t) => {
  const r = await ldbox(['run', 'examples/hello.js', '--input', '{"name":"x"}'], {
    LDBOX_GATEWAY_PORT: '1',
    LDBOX_EXECUTOR_CONCURRENCY: '2',
    LDBOX_MAX_CODE_BYTE: '1MiB',
  });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stderr.split('\n')[0], 'warning: LDBOX_MAX_CODE_BYTE is not a setting; did you mean LDBOX_MAX_CODE_BYTES?');
  t.equal(r.stderr.match(/^warning:/gm)?.length, 1, 'one warning');
});
