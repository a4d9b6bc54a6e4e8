/**
 * Module customization hooks (node:module `register`) that append the URL of every module loaded to the file
 * named by MODULE_LOAD_LOG: what a command loads, for test/cli/help-and-version.test.ts. Hooks run on a
 * thread of their own, so the log is written synchronously, one URL per line.
 */
import { appendFileSync } from 'node:fs';

type Next = (url: string, context: unknown) => Promise<unknown>;

export async function load(url: string, context: unknown, next: Next): Promise<unknown> {
  const log = process.env.MODULE_LOAD_LOG;
  if (log) appendFileSync(log, `${url}\n`);
  return next(url, context);
}
