/**
 * Parsers for environment settings. Each setting is described once, by a {@link SettingSpec} in the
 * config module of the role that reads it; the loaders read through these specs, `--help` prints them and
 * the unknown-variable warning collects their names (src/cli/known-settings.ts). Each rule fails with
 * an exact message naming the variable, the accepted values and the value it got, so a misconfigured
 * deployment says what to fix instead of starting with a surprise.
 */

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export type Env = Readonly<Record<string, string | undefined>>;

interface SpecBase {
  readonly name: string;
  /** What the setting does, for `ldbox <command> --help`. */
  readonly meaning: string;
  /** The default as shown to people when it is not simply `fallback` (`cores`, `64 × size`). */
  readonly shown?: string;
}

/** A whole number from `min` to `max`. */
export interface IntSpec extends SpecBase {
  readonly kind: 'int';
  readonly fallback: number;
  readonly min: number;
  readonly max: number;
}

/**
 * A size: plain digits count in `unit` (bytes unless said otherwise), or a number with a unit (`512KiB`,
 * `8MiB`, `1GiB`, `8MB` = 8,000,000 bytes). `fallback`, `min`, `max` and the value read are in `unit`.
 */
export interface SizeSpec extends SpecBase {
  readonly kind: 'size';
  readonly fallback: number;
  readonly min: number;
  readonly max: number;
  /** Bytes per unit of the value (1 for `…_BYTES`, 1 MiB for `…_MB`). */
  readonly unit?: number;
}

/**
 * A length of time: a whole number with a unit (`7d`, `24h`, `90m`), or plain digits counting in `unit`
 * (hours unless said otherwise). `fallback`, `min`, `max` and the value read are in milliseconds.
 */
export interface DurationSpec extends SpecBase {
  readonly kind: 'duration';
  readonly fallback: number;
  readonly min: number;
  readonly max: number;
  /** What plain digits count: `h` (the default) or `m`. */
  readonly unit?: 'h' | 'm';
}

/** One of a few words. */
export interface ChoiceSpec extends SpecBase {
  readonly kind: 'choice';
  readonly fallback: string;
  readonly choices: readonly string[];
}

/** Anything checked by its own code (hosts, URLs, tokens, lists, paths); `shown` is its default. */
export interface TextSpec extends SpecBase {
  readonly kind: 'text';
  readonly shown: string;
}

export type SettingSpec = IntSpec | SizeSpec | DurationSpec | ChoiceSpec | TextSpec;

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const TiB = 1024 * GiB;

/** The default of a setting as `--help` and the README show it. */
export function shownDefault(spec: SettingSpec): string {
  if (spec.shown !== undefined) return spec.shown;
  switch (spec.kind) {
    case 'int':
      return String(spec.fallback);
    case 'size':
      return formatSize(spec.fallback * (spec.unit ?? 1));
    case 'duration':
      return formatDuration(spec.fallback);
    case 'choice':
      return spec.fallback;
    case 'text':
      return spec.shown;
  }
}

/** The values a setting accepts, for `--help`; empty when its meaning says it. */
export function acceptedValues(spec: SettingSpec): string {
  switch (spec.kind) {
    case 'int':
      return `${spec.min} to ${spec.max}`;
    case 'size':
      return `${formatSize(spec.min * (spec.unit ?? 1))} to ${formatSize(spec.max * (spec.unit ?? 1))}`;
    case 'duration':
      return `${formatDuration(spec.min)} to ${formatDuration(spec.max)}`;
    case 'choice':
      return spec.choices.join(', ');
    case 'text':
      return '';
  }
}

/** A byte count as `NGiB`, `NMiB` or `NKiB` when it is a whole number of those, else as plain bytes. */
export function formatSize(bytes: number): string {
  for (const [unit, label] of [
    [TiB, 'TiB'],
    [GiB, 'GiB'],
    [MiB, 'MiB'],
    [KiB, 'KiB'],
  ] as const) {
    if (bytes !== 0 && bytes % unit === 0) return `${bytes / unit}${label}`;
  }
  return String(bytes);
}

const DURATION_UNITS = { d: 86_400_000, h: 3_600_000, m: 60_000 } as const;

/** Milliseconds as `Nd`, `Nh` or `Nm` when a whole number of those, else `Nms`. */
export function formatDuration(ms: number): string {
  for (const [unit, per] of Object.entries(DURATION_UNITS)) if (ms !== 0 && ms % per === 0) return `${ms / per}${unit}`;
  return `${ms}ms`;
}

function unset(raw: string | undefined): raw is undefined {
  return raw === undefined || raw.trim() === '';
}

export function intSetting(env: Env, spec: IntSpec, fallback = spec.fallback): number {
  const { name, min, max } = spec;
  const raw = env[name];
  if (unset(raw)) return fallback;
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n)) throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  if (n < min || n > max) throw new ConfigError(`${name} must be from ${min} to ${max}, got ${n}`);
  return n;
}

/** Bytes per unit. IEC units in any case; SI units only as written here (`mb` could be megabits). */
const BINARY_UNITS: Record<string, number> = { b: 1, kib: KiB, mib: MiB, gib: GiB, tib: TiB };
const DECIMAL_UNITS: Record<string, number> = { B: 1, kB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12 };
/** Units that could mean either: `8M` (MiB or MB?), `8KB` (KiB by JEDEC, kB by SI), `8mb`, `8Mb` (megabits?). */
const AMBIGUOUS = /^(k|m|g|t)(b)?$/i;

export function sizeSetting(env: Env, spec: SizeSpec, fallback = spec.fallback): number {
  const { name, min, max } = spec;
  const unit = spec.unit ?? 1;
  const raw = env[name];
  if (unset(raw)) return fallback;
  const plain = unit === 1 ? 'bytes (1048576)' : 'MiB (64)';
  const m = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(raw);
  if (!m) throw new ConfigError(`${name} must be a size: ${plain} or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "${raw}"`);
  const [, number, suffix] = m as unknown as [string, string, string];
  let per: number | undefined;
  if (suffix === '') per = number.includes('.') ? undefined : unit;
  else per = DECIMAL_UNITS[suffix] ?? BINARY_UNITS[suffix.toLowerCase()];
  if (per === undefined && AMBIGUOUS.test(suffix)) {
    const p = suffix[0]!.toUpperCase() as 'K' | 'M' | 'G' | 'T';
    const iec = { K: KiB, M: MiB, G: GiB, T: TiB }[p]!;
    const si = { K: 1e3, M: 1e6, G: 1e9, T: 1e12 }[p]!;
    throw new ConfigError(
      `${name} must name its unit unambiguously: "${raw.trim()}" could be ${number}${p}iB (${Number(number) * iec} bytes) or ${number}${p === 'K' ? 'k' : p}B (${Number(number) * si} bytes)`,
    );
  }
  if (per === undefined) throw new ConfigError(`${name} must be a size: ${plain} or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "${raw}"`);
  const bytes = Number(number) * per;
  if (!Number.isSafeInteger(bytes)) throw new ConfigError(`${name} must be a whole number of bytes, got "${raw.trim()}" (${bytes} bytes)`);
  if (bytes % unit !== 0) throw new ConfigError(`${name} must be a whole number of MiB, got "${raw.trim()}" (${bytes} bytes)`);
  if (bytes < min * unit || bytes > max * unit) {
    throw new ConfigError(`${name} must be from ${formatSize(min * unit)} to ${formatSize(max * unit)}, got "${raw.trim()}" (${bytes} bytes)`);
  }
  return bytes / unit;
}

/** A {@link DurationSpec} setting, in milliseconds. */
export function durationSetting(env: Env, spec: DurationSpec, fallback = spec.fallback): number {
  const { name } = spec;
  const raw = env[name];
  if (unset(raw)) return fallback;
  const unit = spec.unit ?? 'h';
  const m = /^\s*(\d+)\s*([dhm]?)\s*$/.exec(raw);
  if (!m)
    throw new ConfigError(
      `${name} must be a duration: a whole number with a unit (7d, 24h, 90m) or a number of ${unit === 'h' ? 'hours' : 'minutes'}, got "${raw}"`,
    );
  const ms = Number(m[1]) * DURATION_UNITS[(m[2] || unit) as keyof typeof DURATION_UNITS];
  if (!Number.isSafeInteger(ms) || ms < spec.min || ms > spec.max) {
    throw new ConfigError(`${name} must be from ${formatDuration(spec.min)} to ${formatDuration(spec.max)}, got "${raw.trim()}"`);
  }
  return ms;
}

export function choiceSetting<T extends string>(env: Env, spec: ChoiceSpec & { choices: readonly T[]; fallback: T }): T {
  const raw = env[spec.name];
  if (unset(raw)) return spec.fallback;
  const v = raw.trim();
  if (!(spec.choices as readonly string[]).includes(v)) throw new ConfigError(`${spec.name} must be one of ${spec.choices.join(', ')}, got "${raw}"`);
  return v as T;
}

export function stringSetting(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

export function optionalSecret(env: Env, name: string, minLength: number): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < minLength) throw new ConfigError(`${name} must be at least ${minLength} characters long`);
  return raw;
}

export function hostSetting(env: Env, spec: TextSpec): string {
  const raw = stringSetting(env, spec.name, spec.shown);
  if (!/^[A-Za-z0-9.:\-[\]]+$/.test(raw)) throw new ConfigError(`${spec.name} must be a host name or IP address, got "${raw}"`);
  return raw;
}

/** A comma-separated list; blanks are ignored. */
export function listSetting(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined) return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** LDBOX_MAX_TIMEOUT_MS, read by the runner (the cap) and the executor (the deadline of Execute calls). */
export const MAX_TIMEOUT_MS: IntSpec = {
  kind: 'int',
  name: 'LDBOX_MAX_TIMEOUT_MS',
  fallback: 120_000,
  min: 100,
  max: 3_600_000,
  meaning: 'largest limits.timeoutMs of a call, ms (the executor waits that long plus 10 s for a call without its own)',
};

/** A URL for a message: the user name and password (if any) replaced, so a secret in it is not echoed. */
export function withoutCredentials(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1***@');
}
