/**
 * The built-ins' large libraries load when first used, not when a worker starts (runner/builtins/lazy-require.ts,
 * formats/format-libs.ts): a worker whose calls never make a request or convert a file does not pay for them.
 * preloadRequestLibraries (what a warming-up runner's workers run at start) loads the request ones. This file
 * imports nothing else that could load them.
 */
import { createRequire } from 'node:module';
import t from 'tap';
import { BUILTINS, preloadRequestLibraries } from '../../runner/builtins/index.js';

const require = createRequire(import.meta.url);
const LAZY = ['undici', '@smithy/signature-v4', '@smithy/hash-node', 'apache-arrow', 'parquet-wasm', 'node-sql-parser'];
const loaded = (name: string): boolean => require.cache[require.resolve(name)] !== undefined;

t.test('the built-ins load without their libraries', async (t) => {
  t.ok(Object.keys(BUILTINS.async).length > 0, 'the built-ins are there');
  for (const name of LAZY) t.notOk(loaded(name), `${name} is not loaded`);
});

t.test('preloadRequestLibraries loads the request libraries, and only those', async (t) => {
  preloadRequestLibraries();
  for (const name of ['undici', '@smithy/signature-v4', '@smithy/hash-node']) t.ok(loaded(name), `${name} is loaded`);
  for (const name of ['apache-arrow', 'parquet-wasm', 'node-sql-parser']) t.notOk(loaded(name), `${name} stays on first use`);
});
