import { describeType, fail, hasValue, isRecord, ResultProblems } from './invalid-result-error.js';

/**
 * Spec "Native search integration result": a list of items (or `{items: [...]}`), each checked and
 * normalised: required fields must be present, optional attributes without a value are left out, an
 * incomplete `lastModifiedByUserId` is treated as absent, unknown fields are dropped, and every date
 * value (a Date, an ISO-8601 string or epoch milliseconds; docs/design.md) is emitted as ISO-8601 UTC.
 * Every field at fault, in every item, is listed in one error (ResultProblems), so that an author sees
 * all the missing fields at once.
 */
export function validateNativeSearchResult(value: unknown): Record<string, unknown>[] {
  let items: unknown = value;
  let path = 'result';
  if (isRecord(value) && 'items' in value) {
    items = value.items;
    path = 'items';
  }
  if (!Array.isArray(items)) fail(path, `must be a list of search items, got ${describeType(items)}`);
  const problems = new ResultProblems();
  const out = items.map((item, i) => normaliseItem(item, `${path}[${i}]`, problems));
  problems.throwIfAny();
  return out;
}

const REQUIRED_STRINGS = ['url', 'documentId', 'title', 'mimeType'] as const;
const REQUIRED_DATES = ['lastSeenByUser', 'createdDate', 'lastModifiedByAnyone'] as const;
const PARENT_OPTIONAL = ['title', 'url', 'type', 'driveId', 'siteId', 'listId', 'listItemId'] as const;

function normaliseItem(item: unknown, path: string, problems: ResultProblems): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isRecord(item)) {
    problems.add(path, `must be an object, got ${describeType(item)}`);
    return out;
  }
  for (const k of REQUIRED_STRINGS) out[k] = problems.requiredString(item[k], `${path}.${k}`);
  for (const k of REQUIRED_DATES) {
    if (hasValue(item[k])) out[k] = normaliseDate(item[k], `${path}.${k}`, problems);
    else problems.add(`${path}.${k}`, 'is required');
  }
  if (hasValue(item.author)) {
    const a = item.author;
    if (!isRecord(a)) problems.add(`${path}.author`, `must be an object {id, name, imgUrl?}, got ${describeType(a)}`);
    else {
      const author: Record<string, unknown> = {
        id: problems.string(a.id, `${path}.author.id`),
        name: problems.string(a.name, `${path}.author.name`),
      };
      if (hasValue(a.imgUrl)) author.imgUrl = problems.string(a.imgUrl, `${path}.author.imgUrl`);
      out.author = author;
    }
  }
  if (hasValue(item.lastModifiedByUserId)) {
    const m = item.lastModifiedByUserId;
    if (!isRecord(m)) problems.add(`${path}.lastModifiedByUserId`, `must be an object, got ${describeType(m)}`);
    // Spec: if id, name or the date is missing, the whole object is treated as absent.
    else if (hasValue(m.id) && hasValue(m.name) && hasValue(m.lastModifiedByUserIdDate)) {
      out.lastModifiedByUserId = {
        id: problems.string(m.id, `${path}.lastModifiedByUserId.id`),
        name: problems.string(m.name, `${path}.lastModifiedByUserId.name`),
        lastModifiedByUserIdDate: normaliseDate(m.lastModifiedByUserIdDate, `${path}.lastModifiedByUserId.lastModifiedByUserIdDate`, problems),
      };
    }
  }
  if (hasValue(item.parent)) {
    const p = item.parent;
    if (!isRecord(p)) problems.add(`${path}.parent`, `must be an object {id, ...}, got ${describeType(p)}`);
    else if (!hasValue(p.id)) problems.add(`${path}.parent.id`, 'is required when parent is given');
    else {
      const parent: Record<string, unknown> = { id: problems.string(p.id, `${path}.parent.id`) };
      for (const k of PARENT_OPTIONAL) if (hasValue(p[k])) parent[k] = problems.string(p[k], `${path}.parent.${k}`);
      out.parent = parent;
    }
  }
  return out;
}

/** ISO-8601 date or date-time; a date-time without an offset is taken as UTC. */
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):?(\d{2}))?)?$/;

/** Date.parse rolls "2024-02-30" over to 1 March: check the calendar fields themselves. */
function isRealDateTime(m: RegExpExecArray): boolean {
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return false;
  if (m[4] !== undefined && (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59)) return false;
  if (m[8] !== undefined && (Number(m[8]) > 23 || Number(m[9]) > 59)) return false;
  return true;
}

/**
 * Dates arrive as ISO strings (a guest Date serialises through toJSON) or epoch milliseconds; a bad one
 * is recorded in `problems` (and undefined returned).
 */
export function normaliseDate(v: unknown, path: string, problems: ResultProblems): string | undefined {
  const bad = (problem: string) => {
    problems.add(path, problem);
    return undefined;
  };
  let ms: number;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return bad('must be a finite epoch-milliseconds number');
    ms = v;
  } else if (typeof v === 'string') {
    const m = ISO_8601.exec(v);
    if (!m) return bad(`must be an ISO-8601 date, a Date or epoch milliseconds, got "${v.slice(0, 40)}"`);
    if (!isRealDateTime(m)) return bad(`is not a real calendar date: "${v.slice(0, 40)}"`);
    const hasTime = v.length > 10;
    const hasZone = /(?:Z|[+-]\d{2}:?\d{2})$/.test(v);
    ms = Date.parse(hasTime && !hasZone ? `${v.replace(' ', 'T')}Z` : v.replace(' ', 'T'));
  } else {
    return bad(`must be a date value (Date, ISO-8601 string or epoch milliseconds), got ${describeType(v)}`);
  }
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return bad('is not a valid date');
  return d.toISOString();
}
