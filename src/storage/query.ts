import { decode } from './codec.js';
import type { ProfileSummary, StoredBody, StoredRead } from './profile.js';

export interface SearchFilter {
  ip?: string;
  method?: string;
  status?: number;
  /** Substring of the URL. */
  url?: string;
  /** The same page: the URL up to its query string, exactly (any query string). */
  page?: string;
  /** Only among the newest this many profiles: a bound on what a search without an index reads. */
  newest?: number;
  /** Epoch milliseconds, inclusive. */
  from?: number;
  to?: number;
  type?: string;
  /** The instance that served it (its name), exactly. */
  instance?: string;
  /** The OpenTelemetry trace id it ran under. */
  trace?: string;
  /** Substring of the label: a GraphQL operation's type and name. */
  label?: string;
  /** Profiles that waited behind this one's synchronous code. */
  blockedBy?: string;
  /** Who made it, exactly as the list names them. */
  user?: string;
  /** Profiles this one started: the jobs it queued, the runs and calls it made. */
  parent?: string;
  /** Only profiles recorded before this one (paging to older results). */
  before?: string;
  /** Newest first (the default), or slowest first. */
  sort?: 'time' | 'duration';
  /** A range of statuses, inclusive (500 to 599: the server errors). */
  statusFrom?: number;
  statusTo?: number;
  /** Only requests that took at least this many milliseconds. */
  minDuration?: number;
  limit: number;
}

const COLUMNS = ['token', 'parent', 'ip', 'method', 'url', 'status', 'time', 'duration', 'type', 'instance', 'trace', 'label', 'failed', 'blocked_by', 'user_label'];
/** Columns named otherwise in ProfileSummary. */
const NAMED: Record<string, string> = { blocked_by: 'blockedBy', user_label: 'user' };
/** The summary's columns as a row is written. */
export const INSERT_COLUMNS = COLUMNS.join(', ');
/** …and as it is read: named as ProfileSummary names them. */
const selected = (table: string) => COLUMNS.map((c) => (NAMED[c] === undefined ? `${table}${c}` : `${table}${c} AS "${NAMED[c]}"`)).join(', ');
export const SUMMARY_COLUMNS = selected('');

/** A LIKE pattern for a substring: its own %, _ and \ escaped. */
const containing = (value: string) => `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * The WHERE terms of a search, with `?` placeholders, the same for every store. `like` is the
 * operator that matches the URL substring without regard to case (SQLite's LIKE is; PostgreSQL
 * needs ILIKE).
 */
export function whereOf(filter: SearchFilter, like: 'LIKE' | 'ILIKE'): { where: string[]; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    where.push(sql);
    args.push(value);
  };
  if (filter.ip) add('ip = ?', filter.ip);
  if (filter.method) add('method = ?', filter.method.toUpperCase());
  if (filter.status !== undefined) add('status = ?', filter.status);
  if (filter.statusFrom !== undefined) add('status >= ?', filter.statusFrom);
  if (filter.statusTo !== undefined) add('status <= ?', filter.statusTo);
  if (filter.minDuration !== undefined) add('duration >= ?', filter.minDuration);
  if (filter.url) add(`url ${like} ? ESCAPE '\\'`, containing(filter.url));
  if (filter.page) {
    // Equal, or equal up to a '?': a range of the URL index ('@' follows '?' in byte order).
    where.push('(url = ? OR (url >= ? AND url < ?))');
    args.push(filter.page, `${filter.page}?`, `${filter.page}@`);
  }
  if (filter.newest !== undefined) add('id > (SELECT coalesce(max(id), 0) FROM profiles) - ?', filter.newest);
  if (filter.from !== undefined) add('time >= ?', filter.from);
  if (filter.to !== undefined) add('time <= ?', filter.to);
  if (filter.type) add('type = ?', filter.type);
  if (filter.instance) add('instance = ?', filter.instance);
  if (filter.trace) add('trace = ?', filter.trace);
  if (filter.label) add(`label ${like} ? ESCAPE '\\'`, containing(filter.label));
  if (filter.parent) add('parent = ?', filter.parent);
  if (filter.blockedBy) add('blocked_by = ?', filter.blockedBy);
  if (filter.user) add('user_label = ?', filter.user);
  // A token that is not stored pages from nowhere: the newest, as without it.
  if (filter.before) add('id < coalesce((SELECT id FROM profiles WHERE token = ?), 9007199254740991)', filter.before);
  return { where, args };
}

/** A search as one statement: the matching summaries in the filter's order. */
export function findSql(filter: SearchFilter, like: 'LIKE' | 'ILIKE'): { sql: string; args: unknown[] } {
  const { where, args } = whereOf(filter, like);
  const order = filter.sort === 'duration' ? 'duration DESC, id DESC' : 'id DESC';
  return { sql: `SELECT ${SUMMARY_COLUMNS} FROM profiles ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ?`, args: [...args, filter.limit] };
}

/** Profiles stored after row `id` that match, oldest first: what a live list has not shown yet. */
export function sinceSql(id: number, filter: SearchFilter, like: 'LIKE' | 'ILIKE'): { sql: string; args: unknown[] } {
  const { where, args } = whereOf(filter, like);
  where.push('id > ?');
  return { sql: `SELECT id, ${SUMMARY_COLUMNS} FROM profiles WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`, args: [...args, id, filter.limit] };
}

export const READ_SQL = `SELECT ${selected('p.')}, d.encoding, d.data, c.data AS config
  FROM profiles p LEFT JOIN profile_data d ON d.id = p.id LEFT JOIN configs c ON c.id = d.config WHERE p.token = ?`;

/**
 * Configs no profile can refer to any more: last used (by a writer, in its clock) a day before the
 * oldest profile arrived. A writer marks the configs it uses in every batch it writes.
 */
export const PRUNE_CONFIGS_SQL = 'DELETE FROM configs WHERE used < (SELECT min(time) FROM profiles) - 86400000';

/** A stored row (summary columns, encoded data, the config apart) as storage gives it back: see StoredRead. */
export function profileOf(row: ProfileSummary & { encoding: number | null; data: Buffer | string | null; config: string | null }): StoredRead {
  const { encoding, data, config, ...summary } = row;
  const body = data == null ? { collectors: {} } : (JSON.parse(decode(encoding!, data)) as StoredBody);
  return config === null ? { ...summary, body } : { ...summary, body, config: JSON.parse(config) };
}
