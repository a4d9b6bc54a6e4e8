/**
 * What integration code is told when it reaches for something the sandbox leaves out on purpose: the same
 * words at run time (runner/sandbox/error-hints.ts rewrites QuickJS's bare errors) and before it runs
 * (`ldbox check`, src/check/integration-checker.ts, replaces TypeScript's advice to add the DOM lib).
 */

/** The sandbox's answer to `import`, `export` and `require`. */
export const NO_MODULES = 'there are no modules: the code is a function body, and the built-ins are on ld';

/** Globals of Node or a browser that the sandbox leaves out on purpose, and what to use instead. */
export const INSTEAD: Readonly<Record<string, string>> = {
  console: 'use ld.log(...)',
  fetch: 'use ld.request({ method, url, ... })',
  XMLHttpRequest: 'use ld.request({ method, url, ... })',
  setTimeout: 'use await ld.wait(ms)',
  setInterval: 'use await ld.wait(ms) in a loop',
  setImmediate: 'use await ld.wait(0)',
  require: NO_MODULES,
  module: 'there are no modules: the code is a function body that returns its result',
  exports: 'there are no modules: the code is a function body that returns its result',
};
