/**
 * The workflows: name, workspace, id, version, and the webhook's settings (URL, auth method, signature
 * preset, whether a secret and a verify token are set, warnings). Secrets are never shown: the control
 * plane returns a secret only in the answer of the call that generated it, and this page makes no such call.
 */
import { call } from './api.js';
import { h, message, queryLink, replaceChildren, table } from './dom.js';
import { enumWord, formatTime } from './format.js';

/** Workflows per ListWorkflows page (the control plane's maximum). */
const PAGE_SIZE = 100;

/** Every workflow (following next_page_token), for this page and the executions filter. */
export async function listAllWorkflows(signal) {
  const out = [];
  let pageToken = '';
  do {
    const page = await call('ListWorkflows', { pageSize: PAGE_SIZE, pageToken }, signal);
    out.push(...(page.workflows ?? []));
    pageToken = page.nextPageToken ?? '';
  } while (pageToken !== '');
  return out;
}

const yesNo = (b) => (b ? 'yes' : 'no');

function webhookCells(webhook = {}) {
  const signature = webhook.authMethod === 'AUTH_METHOD_SIGNATURE';
  return [
    h('td', { class: 'url' }, h('code', { class: 'url' }, webhook.url ?? '')),
    h('td', {}, enumWord(webhook.authMethod)),
    h('td', {}, signature ? enumWord(webhook.signaturePreset) : '-'),
    h('td', {}, yesNo(webhook.hasSecret), webhook.previousSecretExpiresAt ? ` (previous until ${formatTime(webhook.previousSecretExpiresAt)})` : ''),
    h('td', {}, signature ? yesNo(webhook.deduplicateDeliveries) : '-'),
    h('td', {}, yesNo(webhook.hasVerifyToken)),
  ];
}

function row(w) {
  const warnings = [...(w.webhook?.warnings ?? []), ...(w.unreadable ? [w.unreadable] : [])];
  return h(
    'tr',
    { 'data-workflow-id': w.id },
    h('td', { class: 'name' }, w.name),
    h('td', {}, w.workspace),
    h('td', {}, h('code', {}, w.id)),
    h('td', { class: 'num' }, w.version ?? 1),
    webhookCells(w.webhook),
    h(
      'td',
      { class: 'warnings' },
      warnings.map((x) => h('div', {}, x)),
    ),
    h('td', {}, queryLink('executions', 'executions', { workflow: w.id })),
  );
}

/** Renders the workflows into `view` (ctx: the view's `signal`; failures are thrown to the app). */
export async function renderWorkflows(view, { signal }) {
  replaceChildren(view, h('h1', {}, 'Workflows'), message('hint', 'Loading…'));
  const workflows = await listAllWorkflows(signal);
  if (signal.aborted) return;
  const body =
    workflows.length === 0
      ? message('hint', 'No workflows yet: create one with `ldbox workflows apply` or CreateWorkflow.')
      : table(
          ['Name', 'Workspace', 'ID', 'Version', 'Webhook URL', 'Auth', 'Signature preset', 'Secret set', 'Dedup', 'Verify token', 'Warnings', ''],
          workflows.map(row),
          { id: 'workflows' },
        );
  replaceChildren(view, h('h1', {}, `Workflows (${workflows.length})`), body);
}
