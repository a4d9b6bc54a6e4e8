/** `loadDataKeys`: LDBOX_DATA_KEY, _FILE, _OLD, _OLD_FILE and every rule's exact message (src/config/data-key-config.ts). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { loadDataKeys } from '../../src/config/data-key-config.js';
import { dataKeyId } from '../../src/crypto/secret-box.js';
import { TEST_DATA_KEY, TEST_DATA_KEY_B } from '../helpers/data-keys.js';
import { configErrorMessage } from '../helpers/config-errors.js';

const idOf = (b64: string) => dataKeyId(Buffer.from(b64, 'base64'));

const configError = (env: Record<string, string | undefined>) => configErrorMessage(loadDataKeys, env);

t.test('the current key, inline or from a file, and old keys', async (t) => {
  t.same(loadDataKeys({ LDBOX_DATA_KEY: TEST_DATA_KEY }).keyIds, [idOf(TEST_DATA_KEY)]);
  t.same(loadDataKeys({ LDBOX_DATA_KEY: ` ${TEST_DATA_KEY}\n` }).keyIds, [idOf(TEST_DATA_KEY)], 'surrounding blanks');
  const dir = t.testdir({ key: `${TEST_DATA_KEY}\n`, old: `# rotated 2026-01\n${TEST_DATA_KEY_B}\n\n` });
  t.same(loadDataKeys({ LDBOX_DATA_KEY_FILE: join(dir, 'key') }).keyIds, [idOf(TEST_DATA_KEY)]);
  t.same(loadDataKeys({ LDBOX_DATA_KEY: TEST_DATA_KEY, LDBOX_DATA_KEY_OLD: ` ${TEST_DATA_KEY_B} ,` }).keyIds, [idOf(TEST_DATA_KEY), idOf(TEST_DATA_KEY_B)]);
  t.same(loadDataKeys({ LDBOX_DATA_KEY: TEST_DATA_KEY, LDBOX_DATA_KEY_OLD_FILE: join(dir, 'old') }).keyIds, [idOf(TEST_DATA_KEY), idOf(TEST_DATA_KEY_B)]);
  t.equal(loadDataKeys({ LDBOX_DATA_KEY_FILE: join(dir, 'key'), LDBOX_DATA_KEY_OLD: TEST_DATA_KEY_B }).current.id, idOf(TEST_DATA_KEY));
});

t.test('exact messages, never the key', async (t) => {
  const dir = t.testdir({ short: Buffer.alloc(31).toString('base64'), empty: '\n' });
  t.equal(
    configError({}),
    'LDBOX_DATA_KEY (or LDBOX_DATA_KEY_FILE) is required: the base64 of 32 random bytes that encrypts stored secrets (generate one with: openssl rand -base64 32)',
  );
  t.equal(configError({ LDBOX_DATA_KEY: '  ' }), configError({}), 'blank = unset');
  t.equal(
    configError({ LDBOX_DATA_KEY: TEST_DATA_KEY, LDBOX_DATA_KEY_FILE: join(dir, 'short') }),
    'LDBOX_DATA_KEY and LDBOX_DATA_KEY_FILE are both set: set one of them',
  );
  t.equal(configError({ LDBOX_DATA_KEY: Buffer.alloc(16).toString('base64') }), 'LDBOX_DATA_KEY must be the base64 of 32 bytes, got 16 bytes');
  t.equal(
    configError({ LDBOX_DATA_KEY: 'not base64!' }),
    'LDBOX_DATA_KEY is not valid base64 (A-Z a-z 0-9 + / with = padding): expected the base64 of 32 bytes (openssl rand -base64 32)',
  );
  t.equal(
    configError({ LDBOX_DATA_KEY: TEST_DATA_KEY.slice(1) }),
    'LDBOX_DATA_KEY is not valid base64 (A-Z a-z 0-9 + / with = padding): expected the base64 of 32 bytes (openssl rand -base64 32)',
    'wrong padding',
  );
  t.equal(configError({ LDBOX_DATA_KEY_FILE: join(dir, 'missing') }), `LDBOX_DATA_KEY_FILE: cannot read "${join(dir, 'missing')}" (ENOENT)`);
  t.equal(configError({ LDBOX_DATA_KEY_FILE: dir }), `LDBOX_DATA_KEY_FILE: cannot read "${dir}" (EISDIR)`);
  t.equal(configError({ LDBOX_DATA_KEY_FILE: join(dir, 'short') }), `LDBOX_DATA_KEY_FILE "${join(dir, 'short')}" must be the base64 of 32 bytes, got 31 bytes`);
  t.equal(
    configError({ LDBOX_DATA_KEY_FILE: join(dir, 'empty') }),
    `LDBOX_DATA_KEY_FILE "${join(dir, 'empty')}" is empty: expected the base64 of 32 bytes (openssl rand -base64 32)`,
  );
  t.equal(
    configError({ LDBOX_DATA_KEY: TEST_DATA_KEY, LDBOX_DATA_KEY_OLD: `${TEST_DATA_KEY_B},abc` }),
    'LDBOX_DATA_KEY_OLD (key 2) is not valid base64 (A-Z a-z 0-9 + / with = padding): expected the base64 of 32 bytes (openssl rand -base64 32)',
  );
  writeFileSync(join(dir, 'old'), `${TEST_DATA_KEY_B}\n${Buffer.alloc(8).toString('base64')}\n`);
  t.equal(
    configError({ LDBOX_DATA_KEY: TEST_DATA_KEY, LDBOX_DATA_KEY_OLD_FILE: join(dir, 'old') }),
    `LDBOX_DATA_KEY_OLD_FILE "${join(dir, 'old')}" line 2 must be the base64 of 32 bytes, got 8 bytes`,
  );
  const almost = Buffer.alloc(16, 7).toString('base64');
  t.notOk(configError({ LDBOX_DATA_KEY: almost })!.includes(almost), 'the value is not echoed');
});
