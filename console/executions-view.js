/**
 * The executions, newest first, with ListExecutions' filters: one workflow, any of the statuses, created
 * after / before (local times in the form, RFC 3339 in the request). The filters live in the URL
 * (`#/executions?workflow=…&status=failed,queued&after=…&before=…`) so that a reload or a shared link
 * shows the same list; "Load more" follows next_page_token.
 */
import { call } from './api.js';
import { h, link, message, replaceChildren } from './dom.js';
import { formatDuration, formatTime, STATUSES, statusWord, toLocalInput } from './format.js';
import { listAllWorkflows } from './workflows-view.js';

const PAGE_SIZE = 50;
const STATUS_BY_WORD = new Map(STATUSES.map(([status, word]) => [word, status]));

/** The filters of the URL's query; unknown statuses and unparsable times are reported, not dropped silently. */
export function filtersOf(params) {
  const problems = [];
  const statuses = [];
  for (const word of (params.get('status') ?? '').split(',').filter((w) => w !== '')) {
    const status = STATUS_BY_WORD.get(word);
    if (status === undefined) problems.push(`unknown status "${word}"`);
    else statuses.push(status);
  }
  const time = (key) => {
    const raw = params.get(key);
    if (raw === null || raw === '') return undefined;
    const d = new Date(raw);
    if (Number.isNaN(d.getTime())) {
      problems.push(`"${key}" is not a time: "${raw}"`);
      return undefined;
    }
    return d.toISOString();
  };
  const after = time('after');
  const before = time('before');
  if (after !== undefined && before !== undefined && after >= before) problems.push('"created before" must be later than "created after"');
  return { workflowId: params.get('workflow') ?? '', statuses, after, before, problems };
}

/** The ListExecutions request of the filters. */
function requestOf(filters, pageToken) {
  const request = { pageSize: PAGE_SIZE, pageToken };
  if (filters.workflowId !== '') request.workflowId = filters.workflowId;
  if (filters.statuses.length > 0) request.statuses = filters.statuses;
  if (filters.after !== undefined) request.createdAfter = filters.after;
  if (filters.before !== undefined) request.createdBefore = filters.before;
  return request;
}

function filterForm(filters, workflows) {
  const options = [h('option', { value: '' }, 'all workflows')];
  const known = new Set();
  for (const w of workflows) {
    known.add(w.id);
    options.push(h('option', { value: w.id, selected: w.id === filters.workflowId }, `${w.name} (${w.id})`));
  }
  if (filters.workflowId !== '' && !known.has(filters.workflowId)) options.push(h('option', { value: filters.workflowId, selected: true }, filters.workflowId));

  const form = h(
    'form',
    { id: 'filters', class: 'filters' },
    h('label', {}, 'Workflow ', h('select', { name: 'workflow' }, options)),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Status'),
      STATUSES.map(([status, word]) =>
        h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'status', value: word, checked: filters.statuses.includes(status) }), ` ${word}`),
      ),
    ),
    h('label', {}, 'Created after ', h('input', { type: 'datetime-local', step: '1', name: 'after', value: toLocalInput(filters.after) })),
    h('label', {}, 'Created before ', h('input', { type: 'datetime-local', step: '1', name: 'before', value: toLocalInput(filters.before) })),
    h('button', { type: 'submit' }, 'Apply'),
    h('a', { href: '#/executions', class: 'quiet' }, 'Clear'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const params = new URLSearchParams();
    if (data.get('workflow')) params.set('workflow', String(data.get('workflow')));
    const words = data.getAll('status').map(String);
    if (words.length > 0) params.set('status', words.join(','));
    // datetime-local values are local times; the URL keeps them as RFC 3339 (UTC).
    for (const key of ['after', 'before']) if (data.get(key)) params.set(key, new Date(String(data.get(key))).toISOString());
    location.hash = `#/executions?${params}`;
  });
  return form;
}

function row(e, names) {
  const name = names.get(e.workflowId);
  return h(
    'tr',
    { 'data-execution-id': e.id, 'data-status': statusWord(e.status) },
    h('td', {}, link(e.id, 'executions', e.id)),
    h('td', {}, name === undefined ? '' : h('span', { class: 'name' }, name, ' '), h('code', {}, e.workflowId)),
    h('td', {}, h('span', { class: `status ${statusWord(e.status)}` }, statusWord(e.status))),
    h('td', { class: 'time' }, formatTime(e.createdAt)),
    h('td', { class: 'num' }, formatDuration(e.startedAt, e.finishedAt)),
    h('td', { class: 'error-cell' }, e.error ?? ''),
  );
}

/**
 * Renders the filtered executions into `view`.
 * @param {HTMLElement} view
 * @param {{signal: AbortSignal, fail: (err: unknown) => void}} ctx the view's lifetime, and where failures go
 * @param {URLSearchParams} params
 */
export async function renderExecutions(view, ctx, params) {
  const { signal } = ctx;
  const filters = filtersOf(params);
  replaceChildren(view, h('h1', {}, 'Executions'), message('hint', 'Loading…'));
  const workflows = await listAllWorkflows(signal);
  if (signal.aborted) return;
  const names = new Map(workflows.map((w) => [w.id, w.name]));
  const status = h('div', { id: 'list-status' });
  const tbody = h('tbody');
  const more = h('button', { type: 'button', id: 'more', hidden: true }, 'Load more');
  const refresh = h('button', { type: 'button', id: 'refresh', class: 'quiet' }, 'Refresh');
  replaceChildren(
    view,
    h('h1', {}, 'Executions'),
    filterForm(filters, workflows),
    h('div', { class: 'actions' }, refresh),
    status,
    h(
      'table',
      { id: 'executions' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['ID', 'Workflow', 'Status', 'Created', 'Ran', 'Error'].map((x) => h('th', { scope: 'col' }, x)),
        ),
      ),
      tbody,
    ),
    more,
  );
  if (filters.problems.length > 0) {
    replaceChildren(status, message('error', `The filters in the address are not valid: ${filters.problems.join('; ')}.`));
    return;
  }

  let pageToken = '';
  let shown = 0;
  const load = async () => {
    more.hidden = true;
    const page = await call('ListExecutions', requestOf(filters, pageToken), signal);
    if (signal.aborted) return;
    const executions = page.executions ?? [];
    shown += executions.length;
    tbody.append(...executions.map((e) => row(e, names)));
    pageToken = page.nextPageToken ?? '';
    more.hidden = pageToken === '';
    replaceChildren(
      status,
      message('hint', shown === 0 ? 'No executions match these filters.' : `${shown} execution${shown === 1 ? '' : 's'}${pageToken ? ' so far' : ''}.`),
    );
  };
  // A refused token goes to the app (back to the login form); any other failure is shown above the list.
  const reportFailure = (err) => {
    if (err?.code === 'unauthenticated' || err?.code === undefined) ctx.fail(err);
    else replaceChildren(status, message('error', `Listing executions failed: ${err.message} (${err.code}).`));
  };
  more.addEventListener('click', () => load().catch(reportFailure));
  refresh.addEventListener('click', () => {
    pageToken = '';
    shown = 0;
    tbody.replaceChildren();
    load().catch(reportFailure);
  });
  await load().catch(reportFailure);
}
