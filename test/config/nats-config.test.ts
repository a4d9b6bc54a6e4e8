/**
 * NATS_URL (a seed list, credentials, tls://) and the NATS credential and TLS settings: what is accepted,
 * the exact message of each rule, and that no message contains a credential.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Env } from '../../src/config/env-parsers.js';
import { loadNatsSettings, redactUrl } from '../../src/config/nats-config.js';
import { natsConnectionOptions } from '../../src/nats/connection-options.js';
import { configErrorMessage } from '../helpers/config-errors.js';

const SEED = 'SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU';
const CREDS = `-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.x\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${SEED}\n------END USER NKEY SEED------\n`;

const configError = (env: Env): string => configErrorMessage(loadNatsSettings, env) ?? 'no error';

t.test('servers: a seed list, schemes, credentials', async (t) => {
  t.strictSame(loadNatsSettings({}), { servers: ['127.0.0.1:4222'], shown: 'nats://127.0.0.1:4222' }, 'default');
  t.strictSame(loadNatsSettings({ NATS_URL: 'nats://a:4222, b:4223 ,nats://[::1]:4224' }), {
    servers: ['a:4222', 'b:4223', '[::1]:4224'],
    shown: 'nats://a:4222,b:4223,nats://[::1]:4224',
  });
  t.strictSame(
    loadNatsSettings({ NATS_URL: 'nats://app:s3cr%40t@a:4222,nats://b:4222' }),
    {
      servers: ['a:4222', 'b:4222'],
      shown: 'nats://***@a:4222,nats://b:4222',
      user: 'app',
      pass: 's3cr@t',
    },
    'percent-encoded password; one entry with credentials covers the list',
  );
  t.strictSame(loadNatsSettings({ NATS_URL: 'nats://app:p@ss:w@rd@a:4222' }).pass, 'p@ss:w@rd', 'the host follows the last @');
  t.strictSame(
    loadNatsSettings({ NATS_URL: 'tls://a:4222,nats://b:4222' }),
    { servers: ['a:4222', 'b:4222'], shown: 'tls://a:4222,nats://b:4222', tls: {} },
    'tls:// turns TLS on',
  );
});

t.test('malformed URLs: exact messages, the password never shown', async (t) => {
  const msg = (shown: string) => `NATS_URL must be nats://host:port, tls://host:port or host:port (comma-separated), got "${shown}"`;
  t.equal(configError({ NATS_URL: 'http://nats:4222' }), msg('http://nats:4222'));
  t.equal(configError({ NATS_URL: 'nats://user:hunter2@nats host:4222' }), msg('nats://***@nats host:4222'));
  t.equal(configError({ NATS_URL: 'http://user:hunter2@nats:4222' }), msg('http://***@nats:4222'));
  t.equal(configError({ NATS_URL: 'nats://user:hunter2/x@nats:4222/' }), msg('nats://***@nats:4222/'));
  t.equal(configError({ NATS_URL: 'nats://a:4222,,nats://b:4222' }), 'NATS_URL must not have an empty entry (servers are comma-separated)');
  t.equal(configError({ NATS_URL: 'nats://a:0' }), 'NATS_URL: the port of "nats://a:0" must be from 1 to 65535');
  t.equal(configError({ NATS_URL: 'nats://user:hunter2@a:70000' }), 'NATS_URL: the port of "nats://***@a:70000" must be from 1 to 65535');
  t.equal(
    configError({ NATS_URL: 'nats://hunter2@a:4222' }),
    'NATS_URL: "nats://***@a:4222" must give its credentials as user:password (a token goes in NATS_TOKEN)',
  );
  t.equal(configError({ NATS_URL: 'nats://u:%zz@a:4222' }), 'NATS_URL: the credentials of "nats://***@a:4222" are not valid percent-encoding');
  t.equal(
    configError({ NATS_URL: 'nats://u:hunter2@a:4222,nats://u:hunter3@b:4222' }),
    'NATS_URL: every server that names credentials must name the same user:password',
  );
  t.equal(redactUrl('nats://u:p@h'), 'nats://***@h');
  t.equal(redactUrl('u:p@h:1'), '***@h:1');
  t.equal(redactUrl('nats://h:1'), 'nats://h:1');
});

t.test('one way of authenticating; files readable and of the right kind', async (t) => {
  const dir = t.testdir({
    'user.creds': CREDS,
    'user.nk': `${SEED}\n`,
    'ca.pem': '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
    'not.pem': 'hunter2',
    sub: {},
  });
  const f = (n: string) => join(dir, n);
  t.strictSame(loadNatsSettings({ NATS_TOKEN: 'tok-hunter2' }), { servers: ['127.0.0.1:4222'], shown: 'nats://127.0.0.1:4222', token: 'tok-hunter2' });
  t.equal(loadNatsSettings({ NATS_CREDS: f('user.creds') }).credsFile, f('user.creds'));
  t.equal(loadNatsSettings({ NATS_NKEY_SEED_FILE: f('user.nk') }).nkeySeedFile, f('user.nk'));
  t.strictSame(loadNatsSettings({ NATS_CA: f('ca.pem') }).tls, { caFile: f('ca.pem') }, 'a CA turns TLS on');
  t.strictSame(loadNatsSettings({ NATS_CERT: f('ca.pem'), NATS_KEY: f('ca.pem') }).tls, { certFile: f('ca.pem'), keyFile: f('ca.pem') });

  t.equal(
    configError({ NATS_URL: 'nats://u:hunter2@a', NATS_TOKEN: 'tok-hunter2' }),
    'NATS takes one way of authenticating, got a user:password in NATS_URL and NATS_TOKEN',
  );
  t.equal(
    configError({ NATS_TOKEN: 'tok-hunter2', NATS_CREDS: f('user.creds'), NATS_NKEY_SEED_FILE: f('user.nk') }),
    'NATS takes one way of authenticating, got NATS_TOKEN and NATS_CREDS and NATS_NKEY_SEED_FILE',
  );
  t.equal(configError({ NATS_TOKEN: 'tok hunter2' }), 'NATS_TOKEN must not contain whitespace');
  t.equal(configError({ NATS_CREDS: f('missing.creds') }), `NATS_CREDS must be a readable file, got "${f('missing.creds')}" (ENOENT)`);
  t.equal(configError({ NATS_CREDS: f('sub') }), `NATS_CREDS must be a readable file, got "${f('sub')}" (not a regular file)`);
  t.equal(configError({ NATS_CREDS: f('not.pem') }), `NATS_CREDS: "${f('not.pem')}" is not a .creds file (a user JWT and an NKEY seed)`);
  t.equal(configError({ NATS_NKEY_SEED_FILE: f('not.pem') }), `NATS_NKEY_SEED_FILE: "${f('not.pem')}" is not an NKEY user seed (one line, SU…)`);
  t.equal(configError({ NATS_CA: f('not.pem') }), `NATS_CA: "${f('not.pem')}" is not a PEM file`);
  t.equal(configError({ NATS_CERT: f('ca.pem') }), 'NATS_CERT and NATS_KEY go together: NATS_KEY is not set');
  t.equal(configError({ NATS_KEY: f('ca.pem') }), 'NATS_CERT and NATS_KEY go together: NATS_CERT is not set');
  if (process.getuid?.() !== 0) {
    writeFileSync(f('locked.pem'), '-----BEGIN X-----');
    chmodSync(f('locked.pem'), 0o000);
    t.equal(configError({ NATS_CA: f('locked.pem') }), `NATS_CA must be a readable file, got "${f('locked.pem')}" (EACCES)`);
  }
});

t.test('nats.js options: the one builder', async (t) => {
  const dir = t.testdir({ 'user.creds': CREDS, 'user.nk': SEED, 'ca.pem': '-----BEGIN CERTIFICATE-----\n' });
  const o = natsConnectionOptions(loadNatsSettings({ NATS_URL: 'tls://u:p@a:1,b:2', NATS_CA: join(dir, 'ca.pem') }));
  t.strictSame(o, { servers: ['a:1', 'b:2'], user: 'u', pass: 'p', tls: { caFile: join(dir, 'ca.pem') } });
  t.strictSame(natsConnectionOptions(loadNatsSettings({ NATS_TOKEN: 'tok' })), { servers: ['127.0.0.1:4222'], token: 'tok' });
  t.type(natsConnectionOptions(loadNatsSettings({ NATS_CREDS: join(dir, 'user.creds') })).authenticator, 'function');
  t.type(natsConnectionOptions(loadNatsSettings({ NATS_NKEY_SEED_FILE: join(dir, 'user.nk') })).authenticator, 'function');
});
