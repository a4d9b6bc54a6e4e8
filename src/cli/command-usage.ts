/**
 * The usage texts of the commands, apart from the commands themselves: `ldbox --help`, `ldbox <command>
 * --help` and `ldbox --version` print them without loading a role, the pool or a NATS client (a command's
 * module is imported only when it runs; src/cli/main.ts).
 */

export const RUN_USAGE =
  'usage: ldbox run FILE.js|- [--input JSON|@FILE] [--auth JSON|@FILE] [--timeout-ms N] [--memory-mb N]\n' +
  '                [--kind generic|files|native-search|native-download] [--out DIR] [--watch]';

/** What `ldbox run --help` adds to the usage line. */
export const RUN_ABOUT = `Runs integration code locally in the runner's sandbox (same pool, same limits): the result as JSON on stdout, logs on stderr.
  FILE.js | -      the code (a function body); - reads it from stdin
  --input, --auth  data.input and data.auth: a JSON object, or @FILE to read it from a file
  --out DIR        write the files of a files result and the file of a native-download result into DIR
                   (created if missing; names are reduced to a plain file name, and an existing file is
                   never overwritten: "a (1).txt" is written next to it)
  --watch          run again whenever FILE.js (or an @FILE) changes; Ctrl-C stops
Exit codes: 0 ok, 1 the code failed, 2 bad usage (missing file, bad JSON, bad option).`;

export const CHECK_USAGE = 'usage: ldbox check FILE.js [FILE.js ...] [--kind generic|files|native-search|native-download]';

/** What `ldbox check --help` adds to the usage line. */
export const CHECK_ABOUT = `Type-checks integration code with TypeScript before it runs, as the sandbox runs it: each file is the body of
an async function (top-level return and await), checked on its own, against the sandbox's globals (types/ld.d.ts:
data, ld.*, atob, btoa, Buffer, FormData). Problems are printed as FILE:LINE:COLUMN message.
  --kind K   the result kind the code is run with (as ldbox run --kind): every return is checked against its
             shape (files, native-search, native-download), and all missing fields of a result are listed
Needs the typescript package (an optional peer dependency: npm install --save-dev typescript@5).
Exit codes: 0 no problems, 1 problems found, 2 bad usage (missing or unreadable file, unknown kind, no TypeScript).`;

export const REENCRYPT_ABOUT =
  'usage: ldbox reencrypt [--help]\n\nSeals every stored node auth value with the current data key (LDBOX_DATA_KEY or LDBOX_DATA_KEY_FILE), reading old ones with LDBOX_DATA_KEY_OLD / LDBOX_DATA_KEY_OLD_FILE; plaintext values stored before encryption at rest are sealed too. Run it after rotating the key; afterwards the old keys can be dropped.\nExit codes: 0 done, 1 some workflow could not be opened or NATS failed, 2 a configuration error.';

/** What each group is, for the top-level usage. */
export const CONTROL_PLANE_USAGE_LINES = `  workflows ...       workflows on a running gateway (LDBOX_URL, LDBOX_ADMIN_TOKEN): apply -f FILE (create or update by name), ls
  executions ...      executions on a running gateway: ls (filters), show ID, replay ID, tail (live)`;
