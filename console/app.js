/**
 * The console's entry: the login form, the views by URL hash, and what happens when a call fails.
 *
 *   #/workflows              the workflows and their webhook settings (workflows-view.js)
 *   #/executions?…           executions with filters (executions-view.js)
 *   #/executions/<id>        one execution, with Replay and Cancel (execution-view.js)
 *
 * The admin token is asked for once per tab and kept in sessionStorage (api.js). Every view runs with an
 * AbortSignal that is aborted when the view is left, so a slow answer never draws over the next view.
 */
import { ApiError, call, forgetToken, saveToken, savedToken } from './api.js';
import { renderExecution } from './execution-view.js';
import { renderExecutions } from './executions-view.js';
import { renderWorkflows } from './workflows-view.js';

const $ = (id) => document.getElementById(id);
const loginSection = $('login');
const loginForm = $('login-form');
const loginMessage = $('login-message');
const view = $('view');
const nav = $('nav');
const logout = $('logout');
const banner = $('banner');

const REFUSED = 'The gateway refused this token: it is not the admin token (LDBOX_ADMIN_TOKEN) of this gateway.';

/** The view of a hash, or undefined. */
function routeOf(hash) {
  let m = /^#\/workflows$/.exec(hash);
  if (m) return { nav: 'workflows', render: (ctx) => renderWorkflows(view, ctx) };
  m = /^#\/executions(?:\?(.*))?$/.exec(hash);
  if (m) return { nav: 'executions', render: (ctx) => renderExecutions(view, ctx, new URLSearchParams(m[1] ?? '')) };
  m = /^#\/executions\/([^/?]+)$/.exec(hash);
  if (m) return { nav: 'executions', render: (ctx) => renderExecution(view, ctx, decodeURIComponent(m[1])) };
  return undefined;
}

let current;

function showLogin(text) {
  current?.abort();
  forgetToken();
  nav.hidden = true;
  logout.hidden = true;
  banner.hidden = true;
  view.replaceChildren();
  loginSection.hidden = false;
  loginMessage.textContent = text;
  $('token').focus();
}

/** Where a view's failures go: a refused token back to the login form, anything else to the banner. */
function fail(err) {
  // A view that was left aborts its calls: nothing to report.
  if (err?.name === 'AbortError') return;
  if (err instanceof ApiError && err.code === 'unauthenticated') {
    showLogin(`${REFUSED} Log in again.`);
    return;
  }
  banner.textContent = err instanceof ApiError ? `${err.message} (${err.code})` : `Unexpected error: ${err?.message ?? err}`;
  banner.hidden = false;
}

function showView() {
  const route = routeOf(location.hash);
  if (route === undefined) {
    location.replace('#/executions');
    return;
  }
  current?.abort();
  const controller = new AbortController();
  current = controller;
  banner.hidden = true;
  loginSection.hidden = true;
  nav.hidden = false;
  logout.hidden = false;
  for (const a of nav.querySelectorAll('a')) a.classList.toggle('active', a.dataset.nav === route.nav);
  // Through a promise: a render that throws at once (a malformed `%` in the address) is reported like any failure.
  Promise.resolve({ signal: controller.signal, fail }).then(route.render).catch(fail);
}

loginForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = $('token').value;
  loginMessage.textContent = 'Checking…';
  saveToken(token);
  try {
    // The cheapest call that needs the token: one workflow.
    await call('ListWorkflows', { pageSize: 1 });
  } catch (err) {
    forgetToken();
    loginMessage.textContent =
      err instanceof ApiError && err.code === 'unauthenticated' ? REFUSED : `Logging in failed: ${err.message} (${err.code ?? 'error'}).`;
    return;
  }
  loginForm.reset();
  loginMessage.textContent = '';
  showView();
});

logout.addEventListener('click', () => showLogin('Logged out.'));
window.addEventListener('hashchange', () => {
  if (savedToken() !== null) showView();
});

if (savedToken() === null) showLogin('');
else showView();
