/** Idle WASM modules are bounded: at most two memory-cap sizes are kept, the most recently used. */
import t from 'tap';
import { capBytesFor, WasmModulePool } from '../../runner/sandbox/wasm-modules.js';

const MiB = 1024 * 1024;

t.test('a caller varying memoryBytes does not leave a module behind per size', async (t) => {
  const pool = new WasmModulePool({ recycleAboveBytes: 64 * MiB, maxCallsPerModule: 1e9 });
  for (const mb of [8, 16, 24, 32]) t.equal(pool.release(await pool.acquire(mb * MiB)), true, `${mb} MiB kept on release`);
  t.equal(pool.retired, 2, 'the two least recently used sizes were dropped');
  const reused = await pool.acquire(32 * MiB);
  t.equal(reused.capBytes, capBytesFor(32 * MiB));
  t.equal(pool.created, 4, 'the most recent size is reused, not created again');
  pool.release(reused);
  await pool.acquire(8 * MiB);
  t.equal(pool.created, 5, 'a dropped size is created anew');
});
