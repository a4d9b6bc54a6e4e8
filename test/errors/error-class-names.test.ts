/**
 * Every exported error class sets `name` to its class name, so logs and `String(err)` say which error it
 * is rather than `Error` (issue 10). The classes are found in the source (`export class X extends …Error`
 * under src/, runner/ and gateway/), so a new class without `name` fails here without editing this test.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';

// Compiled to dist/test/errors: the repository root is three levels up.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return p.endsWith(join('src', 'gen')) ? [] : sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

const found = ['src', 'runner', 'gateway'].flatMap((area) =>
  sourceFiles(join(root, area)).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/^export class (\w+) extends \w*Error\b/gm)].map((m) => ({ file: relative(root, file), cls: m[1]! })),
  ),
);

t.test('the scan finds the error classes', async (t) => {
  t.ok(found.length >= 30, `${found.length} classes`);
  t.ok(found.some((f) => f.cls === 'PoolFullError' && f.file === join('runner', 'pool', 'pool-errors.ts')));
});

for (const { file, cls } of found) {
  t.test(`${cls} (${file})`, async (t) => {
    const mod = (await import(pathToFileURL(join(root, 'dist', file.replace(/\.ts$/, '.js'))).href)) as Record<string, new (...args: unknown[]) => Error>;
    const Class = mod[cls];
    t.type(Class, 'function', 'exported');
    // Every constructor here takes strings (or ignores what it does not use) in its first places.
    const err = new Class!('a', 'b', 'c', 'd');
    t.ok(err instanceof Error);
    t.equal(err.name, cls);
  });
}
