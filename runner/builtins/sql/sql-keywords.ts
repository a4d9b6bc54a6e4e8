import type { Token } from './sql-lexer.js';

/**
 * The keyword sets and token predicates the SQL checks (sql-checks.ts) and the token-level proof
 * (sql-token-proof.ts) share.
 */

/** Statements that only read. `table t` and `values (...)` are PostgreSQL/MySQL shorthands for SELECTs. */
export const READ_LEADERS = new Set(['select', 'with', 'values', 'table']);

/**
 * Keywords that start a statement in at least one of the dialects (PostgreSQL, MySQL including
 * compound statements, BigQuery and Snowflake scripting, T-SQL). A leading keyword outside this list
 * starts no statement anywhere. Named as statement types in messages.
 */
export const STATEMENT_KEYWORDS = new Set([
  // Reads and listings.
  'select',
  'with',
  'values',
  'table',
  'show',
  'describe',
  'desc',
  'explain',
  // Data and schema changes, permissions.
  'insert',
  'update',
  'delete',
  'merge',
  'replace',
  'upsert',
  'create',
  'drop',
  'alter',
  'truncate',
  'rename',
  'undrop',
  'grant',
  'revoke',
  'deny',
  'comment',
  'security',
  'reassign',
  'import',
  'export',
  'load',
  'copy',
  'put',
  'get',
  'list',
  'ls',
  'remove',
  'rm',
  'updatetext',
  'writetext',
  'readtext',
  'bulk',
  'receive',
  'send',
  'move',
  // Procedures, dynamic SQL, sessions, transactions.
  'call',
  'exec',
  'execute',
  'do',
  'prepare',
  'deallocate',
  'declare',
  'set',
  'unset',
  'reset',
  'use',
  'begin',
  'start',
  'commit',
  'rollback',
  'savepoint',
  'release',
  'end',
  'abort',
  'save',
  'xa',
  'lock',
  'unlock',
  'handler',
  'listen',
  'notify',
  'unlisten',
  'discard',
  'fetch',
  'open',
  'close',
  'let',
  'setuser',
  'revert',
  // Maintenance and administration.
  'vacuum',
  'analyze',
  'analyse',
  'optimize',
  'repair',
  'check',
  'checksum',
  'cluster',
  'reindex',
  'refresh',
  'checkpoint',
  'flush',
  'kill',
  'shutdown',
  'restart',
  'stop',
  'change',
  'purge',
  'install',
  'uninstall',
  'clone',
  'binlog',
  'cache',
  'help',
  'backup',
  'restore',
  'dbcc',
  'reconfigure',
  'enable',
  'disable',
  'cancel',
  'pragma',
  'attach',
  'detach',
  'msck',
  'uncache',
  // Control flow and messages (stored programs, scripts, T-SQL batches).
  'if',
  'else',
  'elseif',
  'case',
  'while',
  'for',
  'loop',
  'repeat',
  'iterate',
  'leave',
  'break',
  'continue',
  'return',
  'goto',
  'waitfor',
  'print',
  'raiserror',
  'throw',
  'try',
  'signal',
  'resignal',
  'raise',
  'assert',
  'await',
]);

/**
 * Words that never appear in a read-only statement outside a string, a quoted name or a comment:
 * statement keywords (in T-SQL a statement may follow another without a semicolon; in PostgreSQL a
 * CTE body may be a DELETE) and INTO (SELECT ... INTO creates a table, writes a variable or a file).
 */
export const WRITE_WORDS = new Set([
  'insert',
  'update',
  'delete',
  'merge',
  'upsert',
  'drop',
  'create',
  'alter',
  'truncate',
  'grant',
  'revoke',
  'deny',
  'exec',
  'execute',
  'into',
  'dbcc',
  'backup',
  'restore',
  'kill',
  'shutdown',
  'reconfigure',
  'undrop',
  'updatetext',
  'writetext',
  'receive',
]);

/**
 * A word token that is not part of a qualified name (t.update) nor a variable or parameter (@delete,
 * :update). A colon counts as a parameter mark only where no word, number, name or bracket stands right
 * before it: in `x:delete` (a T-SQL label before a DELETE, or a Snowflake path) the word is bare.
 */
export function isBareWord(tokens: readonly Token[], k: number): boolean {
  const t = tokens[k];
  if (t?.kind !== 'word') return false;
  const prev = tokens[k - 1];
  if (isPunct(prev, '.') || isPunct(tokens[k + 1], '.')) return false;
  if (!prev || prev.end !== t.start) return true;
  if (isPunct(prev, '@', '#', '$')) return false;
  return !(isPunct(prev, ':') && !endsValueAt(tokens[k - 2], prev.start));
}

/** Whether `t` is a word, number, string, quoted name or closing bracket that ends right at `at`. */
export function endsValueAt(t: Token | undefined, at: number): boolean {
  if (!t || t.end !== at) return false;
  return t.kind !== 'punct' && t.kind !== 'separator' ? true : isPunct(t, ')', ']', ':');
}

export function isPunct(t: Token | undefined, ...chars: string[]): boolean {
  return t !== undefined && t.kind === 'punct' && chars.includes(t.text);
}

/**
 * Functions that change data or server state, or take locks, when a SELECT calls them (all by their
 * lower-case name): PostgreSQL's sequence and settings functions, advisory locks, large-object writes,
 * dblink and the query_to_xml family (both run any SQL text), server and replication control; MySQL's
 * named locks; T-SQL's OPENQUERY/OPENROWSET/OPENDATASOURCE (run SQL on another server, read files).
 * They are refused in every position (`f(...)`); sequences are also refused as `seq.nextval` and
 * `NEXT VALUE FOR seq`. Functions not named here are not detected: see the README on read-only roles.
 */
export const WRITING_FUNCTIONS: ReadonlySet<string> = new Set([
  'nextval',
  'setval',
  // Assign the transaction an id if it has none (a standby refuses them: "cannot assign TransactionIds").
  'txid_current',
  'pg_current_xact_id',
  'set_config',
  'pg_terminate_backend',
  'pg_cancel_backend',
  'pg_reload_conf',
  'pg_rotate_logfile',
  'pg_switch_wal',
  'pg_switch_xlog',
  'pg_create_restore_point',
  'pg_promote',
  'pg_notify',
  'pg_logical_emit_message',
  'pg_create_logical_replication_slot',
  'pg_create_physical_replication_slot',
  'pg_drop_replication_slot',
  'pg_copy_logical_replication_slot',
  'pg_copy_physical_replication_slot',
  'pg_replication_slot_advance',
  'pg_logical_slot_get_changes',
  'pg_logical_slot_get_binary_changes',
  'pg_stat_reset',
  'pg_stat_reset_shared',
  'pg_stat_reset_single_table_counters',
  'pg_stat_reset_single_function_counters',
  'pg_stat_reset_slru',
  'pg_stat_reset_replication_slot',
  'pg_import_system_collations',
  'pg_file_write',
  'pg_file_rename',
  'pg_file_unlink',
  'pg_file_sync',
  'pg_backup_start',
  'pg_backup_stop',
  'pg_start_backup',
  'pg_stop_backup',
  'pg_wal_replay_pause',
  'pg_wal_replay_resume',
  'query_to_xml',
  'query_to_xml_and_xmlschema',
  'query_to_xmlschema',
  'lowrite',
  'lo_import',
  'lo_export',
  'lo_unlink',
  'lo_create',
  'lo_creat',
  'lo_put',
  'lo_from_bytea',
  'lo_truncate',
  'lo_truncate64',
  'get_lock',
  'release_lock',
  'release_all_locks',
  'openquery',
  'openrowset',
  'opendatasource',
]);

/** Families named by prefix: advisory locks, every dblink function, Snowflake's session and query control. */
const WRITING_FUNCTION_PREFIXES = /^(?:pg_(?:try_)?advisory_|dblink|system\$(?:abort|cancel|set|enable|disable|pipe_force|wait))/;

export function isWritingFunction(name: string): boolean {
  return WRITING_FUNCTIONS.has(name) || WRITING_FUNCTION_PREFIXES.test(name);
}
