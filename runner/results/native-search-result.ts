import { describeType, fail, hasValue, isRecord, requireString } from './invalid-result-error.js';

/**
 * Spec "Native search integration result": a list of items (or `{items: [...]}`), each checked and
 * normalised: required fields must be present, optional attributes without a value are left out, an
 * incomplete `lastModifiedByUserId` is treated as absent, unknown fields are dropped, and every date
 * value (a Date, an ISO-8601 string or epoch milliseconds; DESIGN.md) is emitted as ISO-8601 UTC.
 */
export function validateNativeSearchResult(value: unknown): Record<string, unknown>[] {
  let items: unknown = value;
  let path = 'result';
  if (isRecord(value) && 'items' in value) {
    items = value.items;
    path = 'items';
  }
  if (!Array.isArray(items)) fail(path, `must be a list of search items, got ${describeType(items)}`);
  return items.map((item, i) => normaliseItem(item, `${path}[${i}]`));
}

const REQUIRED_STRINGS = ['url', 'documentId', 'title', 'mimeType'] as const;
const REQUIRED_DATES = ['lastSeenByUser', 'createdDate', 'lastModifiedByAnyone'] as const;
const PARENT_OPTIONAL = ['title', 'url', 'type', 'driveId', 'siteId', 'listId', 'listItemId'] as const;

function normaliseItem(item: unknown, path: string): Record<string, unknown> {
  if (!isRecord(item)) fail(path, `must be an object, got ${describeType(item)}`);
  const out: Record<string, unknown> = {};
  for (const k of REQUIRED_STRINGS) {
    if (!hasValue(item[k])) fail(`${path}.${k}`, 'is required');
    out[k] = requireString(item[k], `${path}.${k}`);
  }
  for (const k of REQUIRED_DATES) {
    if (!hasValue(item[k])) fail(`${path}.${k}`, 'is required');
    out[k] = normaliseDate(item[k], `${path}.${k}`);
  }
  if (hasValue(item.author)) {
    const a = item.author;
    if (!isRecord(a)) fail(`${path}.author`, `must be an object {id, name, imgUrl?}, got ${describeType(a)}`);
    const author: Record<string, unknown> = {
      id: requireString(a.id, `${path}.author.id`),
      name: requireString(a.name, `${path}.author.name`),
    };
    if (hasValue(a.imgUrl)) author.imgUrl = requireString(a.imgUrl, `${path}.author.imgUrl`);
    out.author = author;
  }
  if (hasValue(item.lastModifiedByUserId)) {
    const m = item.lastModifiedByUserId;
    if (!isRecord(m)) fail(`${path}.lastModifiedByUserId`, `must be an object, got ${describeType(m)}`);
    // Spec: if id, name or the date is missing, the whole object is treated as absent.
    if (hasValue(m.id) && hasValue(m.name) && hasValue(m.lastModifiedByUserIdDate)) {
      out.lastModifiedByUserId = {
        id: requireString(m.id, `${path}.lastModifiedByUserId.id`),
        name: requireString(m.name, `${path}.lastModifiedByUserId.name`),
        lastModifiedByUserIdDate: normaliseDate(m.lastModifiedByUserIdDate, `${path}.lastModifiedByUserId.lastModifiedByUserIdDate`),
      };
    }
  }
  if (hasValue(item.parent)) {
    const p = item.parent;
    if (!isRecord(p)) fail(`${path}.parent`, `must be an object {id, ...}, got ${describeType(p)}`);
    if (!hasValue(p.id)) fail(`${path}.parent.id`, 'is required when parent is given');
    const parent: Record<string, unknown> = { id: requireString(p.id, `${path}.parent.id`) };
    for (const k of PARENT_OPTIONAL) if (hasValue(p[k])) parent[k] = requireString(p[k], `${path}.parent.${k}`);
    out.parent = parent;
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

/** Dates arrive as ISO strings (a guest Date serialises through toJSON) or epoch milliseconds. */
export function normaliseDate(v: unknown, path: string): string {
  let ms: number;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) fail(path, 'must be a finite epoch-milliseconds number');
    ms = v;
  } else if (typeof v === 'string') {
    const m = ISO_8601.exec(v);
    if (!m) fail(path, `must be an ISO-8601 date, a Date or epoch milliseconds, got "${v.slice(0, 40)}"`);
    if (!isRealDateTime(m)) fail(path, `is not a real calendar date: "${v.slice(0, 40)}"`);
    const hasTime = v.length > 10;
    const hasZone = /(?:Z|[+-]\d{2}:?\d{2})$/.test(v);
    ms = Date.parse(hasTime && !hasZone ? `${v.replace(' ', 'T')}Z` : v.replace(' ', 'T'));
  } else {
    fail(path, `must be a date value (Date, ISO-8601 string or epoch milliseconds), got ${describeType(v)}`);
  }
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) fail(path, 'is not a valid date');
  return d.toISOString();
}
