/** `node --import ./log-module-loads.js`: registers module-load-hooks.js (the URL of every module loaded, to MODULE_LOAD_LOG). */
import { register } from 'node:module';

register('./module-load-hooks.js', import.meta.url);
