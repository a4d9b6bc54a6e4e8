#!/usr/bin/env node
// The `ldbox` command. The TypeScript sources are compiled to dist/ by `npm ci` (prepare) or `npm run build`.
import { existsSync } from 'node:fs';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('ldbox is not built yet: run `npm run build` (npm ci does it for you)\n');
  process.exit(2);
}
const { runCli } = await import(main.href);
process.exitCode = await runCli(process.argv.slice(2));
