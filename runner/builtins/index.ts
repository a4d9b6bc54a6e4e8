import type { BuiltinTable, GuestBinding } from './builtin.js';
import { atob, btoa, log, wait } from './utilities.js';

export type { BuiltinConfig, BuiltinContext, BuiltinTable, GuestBinding } from './builtin.js';
export { DEFAULT_BUILTIN_CONFIG } from './builtin.js';

/** Every host built-in, by the name the guest bridge calls it with. */
export const BUILTINS: BuiltinTable = {
  sync: { log, atob, btoa },
  async: { wait },
};

/** How the built-ins appear in the guest (spec "Sandbox functions"). */
export const GUEST_BINDINGS: readonly GuestBinding[] = [
  { guest: 'wait', host: 'wait', mode: 'async' },
  { guest: 'atob', host: 'atob', mode: 'sync', global: true },
  { guest: 'btoa', host: 'btoa', mode: 'sync', global: true },
];
