/**
 * One line for a `node:util` `parseArgs` error (its own messages span several lines and suggest `--`):
 * `unknown option --nope`, `--input needs a value`, `unexpected argument "x"`, `--help takes no value`.
 */
export function usageMessage(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const option = /'(?:-\w, )?(--?[^' ]+)/.exec(e.message)?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option ?? e.message}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (/does not take an argument/.test(e.message)) return `${option} takes no value`;
      if (/ambiguous/.test(e.message)) return `${option} needs a value (one starting with - is written ${option}=-…)`;
      return option ? `${option} needs a value` : e.message.split('\n')[0]!;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL': {
      const arg = /'([^']*)'/.exec(e.message)?.[1];
      return arg === undefined ? 'unexpected argument' : `unexpected argument ${JSON.stringify(arg)}`;
    }
    default:
      return e.message.split('\n')[0]!;
  }
}

/** True when `err` comes from `parseArgs`. */
export function isParseArgsError(err: unknown): boolean {
  return String((err as NodeJS.ErrnoException | undefined)?.code).startsWith('ERR_PARSE_ARGS_');
}
