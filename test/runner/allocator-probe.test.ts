/**
 * The allocator probe (memory-snapshot.ts, locateAllocatorBreak) runs once per thread, on the first
 * module, and must leave that module exactly as it found it: every later module of the thread is taken
 * to have the same pristine memory, and the snapshot of the realm is taken from it. So the first module
 * (probed) and the second (never probed) of a fresh thread are byte-identical. This file creates no
 * other module before them.
 */
import t from 'tap';
import { capBytesFor, createCappedModule } from '../../runner/sandbox/wasm-modules.js';

t.test('the probed module is byte-identical to one that was never probed', async (t) => {
  const probed = await createCappedModule(capBytesFor(0));
  const untouched = await createCappedModule(capBytesFor(0));
  t.equal(probed.breakAddress, untouched.breakAddress);
  const a = Buffer.from(probed.memory.buffer);
  const b = Buffer.from(untouched.memory.buffer);
  t.equal(a.length, b.length, 'the probe did not grow the memory (or the other module grew as much)');
  let first = -1;
  for (let at = 0; at < Math.min(a.length, b.length) && first < 0; at += 4096) {
    const end = Math.min(at + 4096, a.length, b.length);
    if (a.compare(b, at, end, at, end) !== 0) for (let i = at; i < end && first < 0; i++) if (a[i] !== b[i]) first = i;
  }
  t.equal(first, -1, first < 0 ? 'no byte differs' : `byte ${first} differs`);
  const breakWord = probed.breakAddress >>> 2;
  t.equal(new Uint32Array(probed.memory.buffer)[breakWord], new Uint32Array(untouched.memory.buffer)[breakWord], 'the break is back at the heap base');
});
