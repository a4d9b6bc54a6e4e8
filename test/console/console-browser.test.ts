/**
 * The web console in a real Chromium against a running stack (nats-server, gateway, runner, executor): a
 * wrong token is refused with a message, the right one logs in; the workflows page shows the webhook
 * settings and never a secret; a workflow name, an error and a log line holding markup show as text (no
 * element is made of them); the status filter finds the failed execution, which shows its trigger, error
 * and logs; a succeeded one shows its node's output and timings; Replay makes a new execution that
 * appears in the list; Cancel stops a running one; a token that stops working mid-session goes back to
 * the login form. Every wait is on a condition in the page.
 *
 * LDBOX_TEST_CONSOLE_SCREENSHOTS=docs/console writes the README's screenshots there (PNG) while the test runs.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import t from 'tap';
import { createFlow, getExecution, sharedRunner, stackFixture, waitForFinish } from '../executor/harness.js';
import { ADMIN_TOKEN, hook, rpc } from '../gateway/harness.js';
import { startChromium } from '../helpers/chromium.js';

const SCREENSHOTS = process.env.LDBOX_TEST_CONSOLE_SCREENSHOTS;

async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Markup that would make an element (and run code, were it not for the CSP) if rendered as HTML. */
const NAME = '<img src=x onerror="window.__xss=1"> orders sync';
const LOG_LINE = '<img src=x onerror="window.__xss=2"> fetching order 7';
const ERROR = 'upstream answered 503 <b>Service Unavailable</b>';

async function created(r: Awaited<ReturnType<typeof rpc>>): Promise<any> {
  if (r.status !== 200) throw new Error(`CreateWorkflow: ${r.status} ${r.text}`);
  return r.json.workflow;
}

async function fire(base: string, workflowId: string, body: unknown): Promise<string> {
  const r = await hook(base, workflowId, { body });
  if (r.status !== 202) throw new Error(`webhook: ${r.status} ${r.text}`);
  return r.json.executionId;
}

// The file's runner, a process of its own (harness.ts: one in this process runs under tap's slow module loader).
const runner = sharedRunner(t);

t.test('the web console in Chromium', async (t) => {
  const { base } = await stackFixture(t, { runner: await runner() });
  const failing = await created(
    await rpc(base, 'CreateWorkflow', {
      name: NAME,
      workspace: 'shop',
      nodes: [
        {
          id: 'fetch_order',
          code: `ld.log(${JSON.stringify(LOG_LINE)}); throw new Error(${JSON.stringify(ERROR)});`,
          input: { order: '{{trigger.output.body.order}}' },
        },
      ],
      webhook: { authMethod: 'AUTH_METHOD_NONE' },
    }),
  );
  const signed = await created(
    await rpc(base, 'CreateWorkflow', {
      name: 'github push',
      workspace: 'shop',
      nodes: [{ id: 'a', code: 'return { ok: true }' }],
      webhook: { authMethod: 'AUTH_METHOD_SIGNATURE', signaturePreset: 'SIGNATURE_PRESET_GITHUB' },
    }),
  );
  const secret: string = signed.webhook.secret;
  t.match(secret, /^whsec_/, 'CreateWorkflow shows the signing secret once');
  const fine = await createFlow(base, [{ id: 'ok', code: 'return { ok: true, doubled: data.input.x * 2 }', input: { x: '{{trigger.output.body.x}}' } }]);
  const spin = await createFlow(base, [{ id: 'spin', code: 'while (true) {}', limits: { timeoutMs: 60_000 } }]);

  const failedId = await fire(base, failing.id, { order: 7 });
  const succeededId = await fire(base, fine.id, { x: 21 });
  t.equal((await waitForFinish(base, failedId)).status, 'EXECUTION_STATUS_FAILED');
  t.equal((await waitForFinish(base, succeededId)).status, 'EXECUTION_STATUS_SUCCEEDED');

  const { context, messages } = await startChromium(t);
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const executionRow = (id: string) => page.locator(`#executions tr[data-execution-id="${id}"]`);

  await t.test('a wrong token is refused with a message and not kept', async (t) => {
    await page.goto(`${base}/console/`);
    await page.locator('#login-form').waitFor();
    await page.fill('#token', 'not-the-admin-token');
    await page.click('#login-form button[type=submit]');
    await page.locator('#login-message', { hasText: 'refused this token' }).waitFor();
    t.equal(
      await page.locator('#login-message').textContent(),
      'The gateway refused this token: it is not the admin token (LDBOX_ADMIN_TOKEN) of this gateway.',
    );
    t.equal(await page.evaluate(() => sessionStorage.length), 0, 'the refused token is not kept');
    t.ok(await page.locator('#nav').isHidden(), 'no navigation before logging in');
    await screenshot(page, 'login');
  });

  await t.test('the right token logs in, kept in sessionStorage only', async (t) => {
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#login-form button[type=submit]');
    await page.locator('#executions').waitFor();
    t.equal(await page.evaluate(() => sessionStorage.getItem('ldbox.adminToken')), ADMIN_TOKEN);
    t.equal(await page.evaluate(() => localStorage.length), 0);
    t.equal(await page.evaluate(() => document.cookie), '');
    t.ok(await page.locator('#login').isHidden());
  });

  await t.test('workflows: webhook settings, names as text, never a secret', async (t) => {
    await page.click('a[data-nav=workflows]');
    const row = page.locator(`#workflows tr[data-workflow-id="${failing.id}"]`);
    await row.waitFor();
    t.equal(await row.locator('td.name').textContent(), NAME, 'the name shows as the characters it holds');
    t.equal(await page.locator('img').count(), 0, 'no element was made of the name');
    const cells = async (id: string) => (await page.locator(`#workflows tr[data-workflow-id="${id}"] td`).allTextContents()).map((s) => s.trim());
    t.same((await cells(signed.id)).slice(0, 11), [
      'github push',
      'shop',
      signed.id,
      '1',
      `${base}/api/hooks/workflows/${signed.id}`,
      'signature',
      'github',
      'yes',
      'no',
      'no',
      '',
    ]);
    t.same((await cells(failing.id)).slice(4, 8), [`${base}/api/hooks/workflows/${failing.id}`, 'none', '-', 'no']);
    const html = await page.content();
    t.notOk(html.includes(secret), 'the signing secret is nowhere in the page');
    t.notOk(html.includes(ADMIN_TOKEN), 'nor the admin token');
    await screenshot(page, 'workflows');
  });

  await t.test('the status filter finds the failed execution only', async (t) => {
    await page.click('a[data-nav=executions]');
    await page.locator('#filters').waitFor();
    await executionRow(succeededId).waitFor();
    await page.check('input[name=status][value=failed]');
    await page.click('#filters button[type=submit]');
    await page.locator('#list-status', { hasText: '1 execution.' }).waitFor();
    t.match(page.url(), /#\/executions\?status=failed$/);
    t.same(await page.locator('#executions tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.executionId)), [failedId]);
    t.equal((await executionRow(failedId).locator('td.error-cell').textContent())?.includes(ERROR), true, 'the error shows as text');
    t.ok(await page.locator('input[name=status][value=failed]').isChecked(), 'the form shows the filter in use');

    await t.test('time filters: after now → none; after later than before → a message', async (t) => {
      await page.fill('input[name=after]', '2099-01-01T00:00:00');
      await page.click('#filters button[type=submit]');
      await page.locator('#list-status', { hasText: 'No executions match these filters.' }).waitFor();
      t.equal(await page.locator('#executions tbody tr').count(), 0);
      await page.fill('input[name=before]', '2098-01-01T00:00:00');
      await page.click('#filters button[type=submit]');
      await page.locator('#list-status', { hasText: '"created before" must be later than "created after"' }).waitFor();
      await page.fill('input[name=after]', '2000-01-01T00:00:00');
      await page.fill('input[name=before]', '2098-01-01T00:00:00');
      await page.click('#filters button[type=submit]');
      await executionRow(failedId).waitFor();
      t.equal(await page.locator('#executions tbody tr').count(), 1, 'status and time filters together');
    });
  });

  let replayId = '';
  await t.test('one execution: trigger, node, error and logs as text; Replay makes a new one', async (t) => {
    await executionRow(failedId).locator('a').click();
    await page.locator('#execution-error').waitFor();
    t.equal(await page.locator('#execution-error').textContent(), `node "fetch_order" failed: Error: ${ERROR}`);
    const node = page.locator('.node[data-node-id=fetch_order]');
    t.equal(await node.locator('.status').textContent(), 'failed');
    t.same(await node.locator('.log-message').allTextContents(), [LOG_LINE], 'the log line shows as the characters it holds');
    t.match(await node.locator('.node-error').textContent(), ERROR);
    t.match(await page.locator('.trigger-body').textContent(), /"order": 7/);
    t.match(await page.locator('#trigger').textContent(), /POST/);
    t.equal(await page.locator('img').count(), 0, 'no element was made of the log line or the error');
    t.equal(await page.evaluate(() => (window as any).__xss), undefined);
    t.ok(await page.locator('#cancel').isDisabled(), 'a failed execution cannot be cancelled');
    await screenshot(page, 'execution');

    await page.click('#replay');
    await page.waitForURL((url) => /#\/executions\/ex_\w+$/.test(url.hash) && !url.hash.endsWith(failedId));
    replayId = decodeURIComponent(new URL(page.url()).hash.split('/').pop()!);
    await page.locator('.facts dd a', { hasText: failedId }).waitFor();
    await page.locator('h1 .status.failed').waitFor();
    t.equal((await getExecution(base, replayId)).replayOf, failedId, 'the control plane has the replay');

    await page.goto(`${base}/console/#/executions?status=failed`);
    await executionRow(replayId).waitFor();
    t.same(await page.locator('#executions tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.executionId)), [replayId, failedId]);
    await screenshot(page, 'executions');
  });

  await t.test("one succeeded execution: its node's output and timings", async (t) => {
    await page.goto(`${base}/console/#/executions?workflow=${fine.id}`);
    await executionRow(succeededId).locator('a').click();
    await page.locator('h1 .status.succeeded').waitFor();
    const node = page.locator('.node[data-node-id=ok]');
    t.equal(await node.locator('.status').textContent(), 'succeeded');
    t.equal(await node.locator('pre.output').textContent(), JSON.stringify({ ok: true, doubled: 42 }, null, 2), 'the output the code returned');

    // The durations shown are those of the record (console/format.js: `850 ms`, `2.4 s`, `3 min 5 s`).
    const record = await getExecution(base, succeededId);
    const duration = (from: string, to: string) => {
      const ms = Math.max(0, Date.parse(to) - Date.parse(from));
      return ms < 1000 ? `${ms} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
    };
    const [recorded] = record.nodes;
    t.ok(recorded.startedAt && recorded.finishedAt, 'the record has the node times');
    t.equal(await node.locator('h3 .hint').textContent(), duration(recorded.startedAt, recorded.finishedAt), "the node's duration");
    const time = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/;
    const nodeFacts = await node.locator('.facts dd').allTextContents();
    t.equal(nodeFacts.length, 2);
    for (const shown of nodeFacts) t.match(shown, time, 'the node started and finished at a time shown');
    const facts: Record<string, string> = Object.fromEntries(
      await page
        .locator('#view > .facts')
        .evaluate((dl) => Array.from(dl.querySelectorAll('dt')).map((dt) => [dt.textContent ?? '', dt.nextElementSibling?.textContent ?? ''])),
    );
    const finished = facts.Finished ?? '';
    t.match(finished, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \(ran /, 'the execution finished at a time shown');
    t.equal(finished.slice(finished.indexOf(' (')), ` (ran ${duration(record.startedAt, record.finishedAt)})`, "the execution's run time");
    t.match(facts.Started ?? '', / \(queued (\d+ ms|\d+\.\d s|\d+ min \d+ s)\)$/, 'and its time in the queue');
  });

  await t.test('Cancel stops a running execution', async (t) => {
    const spinId = await fire(base, spin.id, {});
    await page.goto(`${base}/console/#/executions/${spinId}`);
    await page.locator('h1 .status.running').waitFor();
    t.ok(await page.locator('#cancel').isEnabled());
    await page.click('#cancel');
    await page.locator('#action-message', { hasText: 'Cancelled.' }).waitFor();
    await page.locator('h1 .status.cancelled').waitFor();
    t.ok(await page.locator('#cancel').isDisabled());
    t.equal((await getExecution(base, spinId)).status, 'EXECUTION_STATUS_CANCELLED');
  });

  await t.test("a workflow's executions link lists that workflow only", async (t) => {
    await page.click('a[data-nav=workflows]');
    await page.locator(`#workflows tr[data-workflow-id="${fine.id}"] a`).click();
    await executionRow(succeededId).waitFor();
    t.match(page.url(), new RegExp(`#/executions\\?workflow=${fine.id}$`));
    t.same(await page.locator('#executions tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.executionId)), [succeededId]);
    t.equal(await page.locator('select[name=workflow]').inputValue(), fine.id, 'the form shows the workflow in use');
  });

  await t.test('hostile or wrong addresses: a message, not a blank page, and nothing made of them', async (t) => {
    await page.goto(`${base}/console/#/executions/ex_00000000000000000000000000`);
    await page.locator('#view .error').waitFor();
    t.match(await page.locator('#view .error').textContent(), /not_found/);

    const markup = '<img src=x onerror="window.__xss=3">';
    await page.goto(`${base}/console/#/executions/${encodeURIComponent(markup)}`);
    await page.locator('#view .error').waitFor();
    t.match(await page.locator('#view .error').textContent(), /invalid_argument/);
    t.equal(await page.locator('#view h1 code').textContent(), markup, 'the id in the address shows as text');

    await page.goto(`${base}/console/#/executions/ex_%E0%A4%A`);
    await page.locator('#banner', { hasText: 'URI malformed' }).waitFor();

    await page.goto(`${base}/console/#/executions?status=failed,bogus&after=yesterday`);
    await page.locator('#list-status .error').waitFor();
    t.equal(
      await page.locator('#list-status .error').textContent(),
      'The filters in the address are not valid: unknown status "bogus"; "after" is not a time: "yesterday".',
    );
    t.equal(await page.locator('#executions tbody tr').count(), 0, 'no call with filters it could not read');
    t.equal(await page.locator('img').count(), 0);
    t.equal(await page.evaluate(() => (window as any).__xss), undefined);
  });

  await t.test('a token that stops working goes back to the login form with a message', async (t) => {
    await page.goto(`${base}/console/#/executions`);
    await page.locator('#refresh').waitFor();
    await page.evaluate(() => sessionStorage.setItem('ldbox.adminToken', 'rotated-away'));
    await page.click('#refresh');
    await page.locator('#login-message', { hasText: 'Log in again.' }).waitFor();
    t.ok(await page.locator('#login').isVisible());
    t.equal(await page.evaluate(() => sessionStorage.length), 0);
    t.equal(await page.locator('#view').textContent(), '', 'no data is left on the page');
  });

  t.test('no CSP violation and no uncaught error in the page', async (t) => {
    t.same(
      messages.filter((m) => /Content Security Policy|page error/i.test(m)),
      [],
    );
  });
});
