/**
 * Building the page from data with DOM APIs only: every string becomes a text node or an attribute value,
 * never markup, so a workflow name or a log line holding `<img onerror=…>` is shown as those characters.
 */

/**
 * Creates an element. `props`: `class`, `on<event>` listeners, booleans (set when true) and other attributes
 * (set with setAttribute). Children: nodes, strings and numbers (as text), arrays; null/undefined/false skipped.
 * @param {string} tag
 * @param {Record<string, unknown>} [props]
 * @param {...unknown} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = String(value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  appendAll(el, children);
  return el;
}

/** Appends children as {@link h} takes them. */
export function appendAll(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces all of `parent`'s children. */
export function replaceChildren(parent, ...children) {
  parent.replaceChildren();
  appendAll(parent, children);
}

/** A link inside the console: `#/` and the path segments, each percent-encoded. */
export function link(text, ...segments) {
  return h('a', { href: `#/${segments.map(encodeURIComponent).join('/')}` }, text);
}

/** A link to a console view with a query: `#/executions?workflow=wf_…&status=failed`. */
export function queryLink(text, path, params) {
  return h('a', { href: `#/${encodeURIComponent(path)}?${new URLSearchParams(params)}` }, text);
}

/** A table with a header row and one row per item. */
export function table(headers, rows, props = {}) {
  return h(
    'table',
    props,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((x) => h('th', { scope: 'col' }, x)),
      ),
    ),
    h('tbody', {}, rows),
  );
}

/** A `<dl>` of label → value pairs; pairs whose value is undefined are skipped. */
export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.filter(([, value]) => value !== undefined).map(([label, value]) => [h('dt', {}, label), h('dd', {}, value)]),
  );
}

/** A message line: `kind` is `error`, `ok` or `hint`. */
export function message(kind, text) {
  return h('p', { class: kind, role: kind === 'error' ? 'alert' : 'status' }, text);
}
