/**
 * One execution: status, error, workflow and version, timings, attempts, cost, the trigger (method,
 * headers, query, body), then each node that started: status, timings, output, logs and error. Replay
 * (ReplayExecution → a new execution, opened) and Cancel (CancelExecution; queued or running only).
 * While the execution is queued or running the page asks again every second.
 */
import { call } from './api.js';
import { facts, h, link, message, queryLink, replaceChildren, table } from './dom.js';
import { enumWord, formatDuration, formatJson, formatTime, isFinal, statusWord } from './format.js';

const REFRESH_MS = 1000;

function statusBadge(status) {
  return h('span', { class: `status ${statusWord(status)}` }, statusWord(status));
}

function pre(text, props = {}) {
  return h('pre', props, text);
}

function triggerSection(trigger) {
  if (trigger === undefined) return h('section', { id: 'trigger' }, h('h2', {}, 'Trigger'), message('hint', 'No trigger recorded.'));
  const headers = Object.entries(trigger.headers ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return h(
    'section',
    { id: 'trigger' },
    h('h2', {}, 'Trigger'),
    facts([['Method', trigger.method || '(not recorded)']]),
    h('h3', {}, 'Headers'),
    headers.length === 0
      ? message('hint', 'none')
      : table(
          ['Header', 'Value'],
          headers.map(([k, v]) => h('tr', {}, h('td', {}, h('code', {}, k)), h('td', {}, h('code', {}, v)))),
          { class: 'headers' },
        ),
    h('h3', {}, 'Query'),
    pre(formatJson(trigger.query ?? {})),
    h('h3', {}, 'Body'),
    pre(formatJson(trigger.body), { class: 'trigger-body' }),
  );
}

function nodeError(error) {
  const code = error.codeError;
  return h(
    'div',
    { class: 'node-error' },
    h('h4', {}, `Error (${enumWord(error.kind)})`),
    pre(error.message ?? '', { class: 'error-message' }),
    code === undefined
      ? null
      : [
          facts([
            ['Kind', enumWord(code.kind)],
            ['Name', code.name || undefined],
            ['Message', code.message || undefined],
          ]),
          code.stack ? pre(code.stack, { class: 'stack' }) : null,
        ],
  );
}

function nodeSection(node) {
  const logs = node.logs ?? [];
  return h(
    'article',
    { class: 'node', 'data-node-id': node.id },
    h('h3', {}, h('code', {}, node.id), ' ', statusBadge(node.status), ' ', h('span', { class: 'hint' }, formatDuration(node.startedAt, node.finishedAt))),
    facts([
      ['Started', formatTime(node.startedAt)],
      ['Finished', formatTime(node.finishedAt)],
    ]),
    node.output === undefined ? null : [h('h4', {}, 'Output'), pre(formatJson(node.output), { class: 'output' })],
    h('h4', {}, `Logs (${logs.length})`),
    logs.length === 0
      ? message('hint', 'none')
      : h(
          'ol',
          { class: 'logs' },
          logs.map((l) => h('li', {}, h('span', { class: 'level' }, enumWord(l.level)), h('span', { class: 'log-message' }, l.message ?? ''))),
        ),
    node.error === undefined ? null : nodeError(node.error),
  );
}

/** The page of one execution (without the action buttons' state). */
function executionPage(e, actions) {
  const nodes = e.nodes ?? [];
  return [
    h('h1', {}, 'Execution ', h('code', {}, e.id), ' ', statusBadge(e.status)),
    actions,
    e.error ? h('p', { class: 'error', id: 'execution-error' }, e.error) : null,
    facts([
      [
        'Workflow',
        h('span', {}, queryLink(e.workflowId, 'executions', { workflow: e.workflowId }), e.workflowVersion ? ` (version ${e.workflowVersion})` : ''),
      ],
      ['Replay of', e.replayOf ? link(e.replayOf, 'executions', e.replayOf) : undefined],
      ['Created', formatTime(e.createdAt)],
      ['Started', `${formatTime(e.startedAt)}${e.startedAt ? ` (queued ${formatDuration(e.createdAt, e.startedAt)})` : ''}`],
      ['Finished', `${formatTime(e.finishedAt)}${e.finishedAt ? ` (ran ${formatDuration(e.startedAt, e.finishedAt)})` : ''}`],
      ['Attempts', String(e.attempts ?? 0)],
      ['Cost', `${e.costUnits ?? '0'} unit${e.costUnits === '1' ? '' : 's'}`],
    ]),
    triggerSection(e.trigger),
    h(
      'section',
      { id: 'nodes' },
      h('h2', {}, `Nodes (${nodes.length})`),
      nodes.length === 0 ? message('hint', 'No node started yet.') : nodes.map(nodeSection),
    ),
  ];
}

/**
 * Renders execution `id` into `view` and keeps it current until it ends or the view is left.
 * @param {HTMLElement} view
 * @param {{signal: AbortSignal, fail: (err: unknown) => void}} ctx
 * @param {string} id
 */
export async function renderExecution(view, ctx, id) {
  const { signal } = ctx;
  replaceChildren(view, h('h1', {}, 'Execution ', h('code', {}, id)), message('hint', 'Loading…'));
  const note = h('div', { id: 'action-message' });
  const replay = h('button', { type: 'button', id: 'replay' }, 'Replay');
  const cancel = h('button', { type: 'button', id: 'cancel', class: 'danger' }, 'Cancel');
  const actions = h('div', { class: 'actions' }, replay, cancel, note);
  let timer;
  signal.addEventListener('abort', () => clearTimeout(timer));

  const show = (e) => {
    cancel.disabled = isFinal(e.status);
    cancel.title = cancel.disabled ? 'only queued or running executions can be cancelled' : '';
    replaceChildren(view, executionPage(e, actions));
    clearTimeout(timer);
    if (!isFinal(e.status)) timer = setTimeout(() => load().catch(ctx.fail), REFRESH_MS);
  };
  const load = async () => {
    const { execution } = await call('GetExecution', { id }, signal);
    if (!signal.aborted) show(execution);
  };
  const act = (button, work) => async () => {
    button.disabled = true;
    try {
      await work();
    } catch (err) {
      if (err?.code === 'unauthenticated' || err?.code === undefined) ctx.fail(err);
      else replaceChildren(note, message('error', `${button.textContent} failed: ${err.message} (${err.code}).`));
    } finally {
      if (button === replay) button.disabled = false;
    }
  };
  replay.addEventListener(
    'click',
    act(replay, async () => {
      const { execution } = await call('ReplayExecution', { id }, signal);
      location.hash = `#/executions/${encodeURIComponent(execution.id)}`;
    }),
  );
  cancel.addEventListener(
    'click',
    act(cancel, async () => {
      const { execution } = await call('CancelExecution', { id }, signal);
      if (signal.aborted) return;
      show(execution);
      replaceChildren(note, message('ok', 'Cancelled.'));
    }),
  );
  try {
    await load();
  } catch (err) {
    if (err?.code !== 'not_found' && err?.code !== 'invalid_argument') throw err;
    replaceChildren(view, h('h1', {}, 'Execution ', h('code', {}, id)), message('error', `${err.message} (${err.code}).`));
  }
}
