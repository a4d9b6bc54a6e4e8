/**
 * The web console at `/console/`: the files of the repository's `console/` folder (plain HTML, CSS and ES
 * modules, no build step), served by src/http/static-files.ts. The page asks for the admin token, keeps it
 * in sessionStorage and sends it as `Authorization: Bearer …` on its Connect JSON calls to the control plane
 * on this same port; the files themselves hold no data and are served without the token.
 *
 * The Content-Security-Policy allows only this origin's own scripts, styles, images and fetches: no inline
 * script or style, no plugin, no framing, no `<base>`; the page renders every value with textContent, so
 * a workflow name or log line holding markup shows as text (test/console/console-browser.test.ts).
 */
import { fileURLToPath } from 'node:url';
import { createStaticFiles, type StaticFiles } from '../src/http/static-files.js';

/** The console's URL path. */
export const CONSOLE_PREFIX = '/console';

/** Where the console's files are: `console/` at the repository (or installed package) root. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

/** The Content-Security-Policy of every console answer. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers of every console answer besides the type and `nosniff` (which static-files.ts sets). */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** The console's files, read once from {@link CONSOLE_DIR}. */
export function createConsoleRoute(): StaticFiles {
  return createStaticFiles({ prefix: CONSOLE_PREFIX, dir: CONSOLE_DIR, headers: CONSOLE_HEADERS });
}
