/**
 * A headless Chromium driven by playwright-core, for the web console's browser test: the binary from
 * scripts/ensure-chromium.sh (Debian's `chromium`, installed when missing and permitted; `CHROMIUM_BIN`
 * overrides), a fresh profile in a temporary folder, no network of its own (no updates, sync or QUIC), and
 * closed with the test. Console messages and page errors are collected so a test can show them.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium } from 'playwright-core';
import type { Test } from 'tap';

/** The repository root (this file is compiled to dist/test/helpers). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The Chromium binary's path, installing it when permitted; rejects with the script's hint otherwise. */
export function findChromium(): Promise<string> {
  return new Promise((resolvePath, reject) => {
    execFile('bash', [join(ROOT, 'scripts', 'ensure-chromium.sh')], { timeout: 900_000 }, (err, stdout, stderr) => {
      const path = stdout.trim();
      if (err || path === '') reject(new Error(stderr.trim() || err?.message || 'chromium not found'));
      else resolvePath(path);
    });
  });
}

export interface TestBrowser {
  context: BrowserContext;
  /** What the pages wrote to their console, and their uncaught errors, in order. */
  messages: string[];
}

/** Starts Chromium with a fresh profile; it is closed and the profile removed at the end of `t`. */
export async function startChromium(t: Test): Promise<TestBrowser> {
  const executablePath = await findChromium();
  const profile = mkdtempSync(join(tmpdir(), 'ldbox-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ARGS,
    viewport: { width: 1360, height: 900 },
  });
  t.teardown(async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  });
  const messages: string[] = [];
  context.on('console', (m) => messages.push(`console.${m.type()}: ${m.text()}`));
  context.on('weberror', (e) => messages.push(`page error: ${e.error().message}`));
  return { context, messages };
}
