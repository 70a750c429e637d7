import { hide, looksLikeToken } from './hidden.js';
import { isSecretKey, REDACTED, redactValue } from './redact.js';
import { hideSecrets, type RequestSecrets } from './request-secrets.js';

/** A placeholder or a string literal in a statement, and the column it is compared with or stored in, when that can be told. */
interface Slot {
  kind: 'param' | 'literal';
  start: number;
  end: number;
  /** For a parameter: its 0-based position, or its name (`:id`, `@id`, `$id`). */
  index?: number;
  name?: string;
  column?: string;
}

interface Token {
  kind: 'word' | 'op' | 'param' | 'literal';
  text: string;
  start: number;
  end: number;
  index?: number;
  name?: string;
}

const WORD = /[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]*/y;
const COMPARE = new Set(['=', '==', '<>', '!=', '<', '>', '<=', '>=', 'like', 'ilike', 'glob', 'is', 'in', 'not']);

/** The statement's words, operators, placeholders and literals, with comments and quoted identifiers read as SQL reads them. */
function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let positional = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    const next = sql[i + 1];
    if (/\s/.test(c)) i++;
    else if (c === '-' && next === '-') i = endOf(sql, '\n', i + 2);
    else if (c === '/' && next === '*') i = endOf(sql, '*/', i + 2);
    else if (c === "'") {
      const end = quoted(sql, i, "'");
      tokens.push({ kind: 'literal', text: sql.slice(i, end), start: i, end });
      i = end;
    } else if (c === '"' || c === '`' || c === '[') {
      const end = quoted(sql, i, c === '[' ? ']' : c);
      tokens.push({ kind: 'word', text: sql.slice(i + 1, end - 1), start: i, end });
      i = end;
    } else if (c === '$' && /\d/.test(next ?? '')) {
      const m = /\$(\d+)/y;
      m.lastIndex = i;
      const found = m.exec(sql)!;
      tokens.push({ kind: 'param', text: found[0], start: i, end: i + found[0].length, index: Number(found[1]) - 1 });
      i += found[0].length;
    } else if (c === '$' && /[A-Za-z_$]/.test(next ?? '')) {
      const tag = /\$([A-Za-z_]\w*)?\$/y;
      tag.lastIndex = i;
      const dollar = tag.exec(sql);
      if (dollar) {
        // A dollar-quoted string (PostgreSQL): $tag$ ... $tag$.
        const close = sql.indexOf(dollar[0], i + dollar[0].length);
        const end = close < 0 ? sql.length : close + dollar[0].length;
        tokens.push({ kind: 'literal', text: sql.slice(i, end), start: i, end });
        i = end;
      } else i = named(sql, i, tokens);
    } else if (c === '?') {
      const m = /\?(\d*)/y;
      m.lastIndex = i;
      const found = m.exec(sql)!;
      const index = found[1] ? Number(found[1]) - 1 : positional++;
      tokens.push({ kind: 'param', text: found[0], start: i, end: i + found[0].length, index });
      i += found[0].length;
    } else if ((c === ':' || c === '@') && /[A-Za-z_]/.test(next ?? '') && sql[i - 1] !== ':') i = named(sql, i, tokens);
    else if (/[A-Za-z_\u0080-\uffff]/.test(c)) {
      WORD.lastIndex = i;
      const word = WORD.exec(sql)![0];
      tokens.push({ kind: 'word', text: word, start: i, end: i + word.length });
      i += word.length;
    } else {
      const op = /^(<=|>=|<>|!=|==|::)/.exec(sql.slice(i, i + 2))?.[0] ?? c;
      tokens.push({ kind: 'op', text: op, start: i, end: i + op.length });
      i += op.length;
    }
  }
  return tokens;
}

function named(sql: string, i: number, tokens: Token[]): number {
  WORD.lastIndex = i + 1;
  const word = WORD.exec(sql)?.[0] ?? '';
  tokens.push({ kind: 'param', text: sql[i] + word, start: i, end: i + 1 + word.length, name: word });
  return i + 1 + word.length;
}

const endOf = (sql: string, close: string, from: number) => {
  const at = sql.indexOf(close, from);
  return at < 0 ? sql.length : at + close.length;
};

/** The end of a quoted run; a doubled quote stands for itself. */
function quoted(sql: string, start: number, quote: string): number {
  for (let i = start + 1; i < sql.length; i++) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote && quote !== ']') i++;
      else return i + 1;
    }
  }
  return sql.length;
}

/**
 * Each placeholder and literal with the column it goes with: `col = ?`, `col IN (?, ?)`,
 * `col LIKE '...'`, `SET col = ?`, through calls on either side (`lower(col) = lower(?)`,
 * `col = ANY(?)`, `col = crypt(?, gen_salt('bf'))`, `CAST(? AS text) = col`), and the values of
 * `INSERT INTO t (a, b) VALUES (?, f(?))` and `INSERT INTO t (a, b) SELECT ?, ?`.
 */
export function slotsOf(sql: string): Slot[] {
  const tokens = tokenize(sql);
  const slots: Slot[] = [];
  const insert = insertColumnsOf(tokens);
  // Where a value sits in the INSERT's rows: which row (VALUES) and which place in it.
  let inRows = insert !== undefined;
  let depth = 0;
  let position = 0;
  for (let t = 0; t < tokens.length; t++) {
    const tok = tokens[t];
    if (inRows && t > insert!.rowsAt) {
      if (tok.text === '(') {
        if (depth === 0 && !insert!.select) position = 0;
        depth++;
      } else if (tok.text === ')') depth--;
      else if (tok.text === ',' && depth === (insert!.select ? 0 : 1)) position++;
      // The rows end where a clause of the statement begins: ON CONFLICT, RETURNING, FROM, WHERE…
      else if (tok.kind === 'word' && depth === 0 && ROWS_END.test(tok.text)) inRows = false;
    }
    if (tok.kind !== 'param' && tok.kind !== 'literal') continue;
    let column = comparedColumn(tokens, t) ?? columnAfter(tokens, t);
    if (column === undefined && inRows && t > insert!.rowsAt && (insert!.select || depth >= 1)) column = insert!.names[position] ?? UNKNOWN;
    slots.push({ kind: tok.kind, start: tok.start, end: tok.end, index: tok.index, name: tok.name, column });
  }
  return slots;
}

/** A value of an INSERT whose column list is missing or shorter: its column cannot be told. */
const UNKNOWN = '';
const ROWS_END = /^(on|returning|from|where|union|except|intersect|order|group|limit)$/i;

function insertColumnsOf(tokens: Token[]): { names: string[]; rowsAt: number; select: boolean } | undefined {
  if (!/^(insert|replace)$/i.test(tokens[0]?.text ?? '')) return undefined;
  const rows = tokens.findIndex((t) => t.kind === 'word' && /^(values|select)$/i.test(t.text));
  if (rows < 0) return undefined;
  const open = tokens.findIndex((t) => t.text === '(');
  const names: string[] = [];
  if (open >= 0 && open < rows) for (let t = open + 1; t < rows && tokens[t].text !== ')'; t++) if (tokens[t].kind === 'word') names.push(tokens[t].text);
  return { names, rowsAt: rows, select: /^select$/i.test(tokens[rows].text) };
}

/** Words that open a parenthesis without being a call a value passes through. */
const NOT_A_CALL = /^(in|values|exists|select|where|and|or|not|on|using|set|when|then|else|case|between)$/i;

/** The column a value is compared with before it: walks back over the list, the calls it is an argument of, and the operator. */
function comparedColumn(tokens: Token[], at: number): string | undefined {
  let t = at - 1;
  for (;;) {
    while (t >= 0 && (tokens[t].text === ',' || tokens[t].kind === 'param' || tokens[t].kind === 'literal')) t--;
    if (t < 0 || tokens[t].text !== '(') break;
    t--;
    if (t >= 0 && tokens[t].kind === 'word' && !NOT_A_CALL.test(tokens[t].text) && !COMPARE.has(tokens[t].text.toLowerCase())) t--;
    else break;
  }
  let sawOperator = false;
  while (t >= 0 && COMPARE.has(tokens[t].text.toLowerCase())) {
    sawOperator = true;
    t--;
  }
  if (!sawOperator || t < 0) return undefined;
  if (tokens[t].kind === 'word') return tokens[t].text;
  return tokens[t].text === ')' ? columnInsideCall(tokens, t) : undefined;
}

/** The column a value is compared with after it: `? = col`, `lower(?) = lower(col)`, `?::text = col`. */
function columnAfter(tokens: Token[], at: number): string | undefined {
  let t = at + 1;
  for (;;) {
    if (tokens[t]?.text === ')' || tokens[t]?.text === ',') t++;
    else if ((tokens[t]?.text === '::' || /^as$/i.test(tokens[t]?.text ?? '')) && tokens[t + 1]?.kind === 'word') t += 2;
    else break;
  }
  let sawOperator = false;
  while (t < tokens.length && COMPARE.has(tokens[t].text.toLowerCase()) && tokens[t].text.toLowerCase() !== 'in') {
    sawOperator = true;
    t++;
  }
  if (!sawOperator || tokens[t]?.kind !== 'word') return undefined;
  if (tokens[t + 1]?.text !== '(') return qualified(tokens, t);
  const close = matching(tokens, t + 1);
  return close === undefined ? undefined : columnInsideCall(tokens, close);
}

/** `lower(u.token)`, `CAST(token AS text)`: the first column named inside the call that ends at `close`. */
function columnInsideCall(tokens: Token[], close: number): string | undefined {
  let depth = 0;
  let open = close;
  for (; open >= 0; open--) {
    if (tokens[open].text === ')') depth++;
    else if (tokens[open].text === '(' && --depth === 0) break;
  }
  for (let t = open + 1; t < close; t++) {
    if (tokens[t].kind === 'word' && tokens[t + 1]?.text !== '(') return qualified(tokens, t);
  }
  return undefined;
}

/** `u.token`: the last part of a qualified name that starts at `t`. */
function qualified(tokens: Token[], t: number): string {
  while (tokens[t + 1]?.text === '.' && tokens[t + 2]?.kind === 'word') t += 2;
  return tokens[t].text;
}

function matching(tokens: Token[], open: number): number | undefined {
  let depth = 0;
  for (let t = open; t < tokens.length; t++) {
    if (tokens[t].text === '(') depth++;
    else if (tokens[t].text === ')' && --depth === 0) return t;
  }
  return undefined;
}

export interface RedactedStatement {
  sql: string;
  params: unknown;
  /** Placeholders whose values were redacted: by position, or by name. */
  hidden: { indexes: number[]; names: string[] };
}

/**
 * A statement and its parameters with secrets taken out, before anything is stored: literals
 * and parameters that go with a secret-looking column (`password_hash = ?`), named parameters
 * with secret-looking names, values the request's profile redacts elsewhere (`secrets`), values
 * that look like tokens where no column can be told, and secrets inside string values, as
 * everywhere else.
 */
export function redactStatement(sql: string, params: unknown, keys: string[], secrets?: RequestSecrets): RedactedStatement {
  const json = jsonStatement(sql, keys, secrets);
  if (json !== undefined) return { sql: json, params: redactValue(params, keys), hidden: { indexes: [], names: [] } };
  const slots = slotsOf(sql);
  const hidden = { indexes: [] as number[], names: [] as string[] };
  const doubtful = { indexes: [] as number[], names: [] as string[] };
  let out = '';
  let from = 0;
  for (const slot of slots) {
    const secret = slot.column !== undefined && isSecretKey(slot.column, keys);
    const unknown = slot.column === undefined || slot.column === UNKNOWN;
    if (slot.kind === 'literal') {
      const text = unquoted(sql.slice(slot.start, slot.end));
      if (secret || secrets?.covers(text) || (unknown && looksLikeToken(text))) {
        out += `${sql.slice(from, slot.start)}'${hide(text)}'`;
        from = slot.end;
      }
    } else if (secret || (slot.name !== undefined && isSecretKey(slot.name, keys))) {
      if (slot.index !== undefined) hidden.indexes.push(slot.index);
      if (slot.name !== undefined) hidden.names.push(slot.name);
    } else if (unknown) {
      if (slot.index !== undefined) doubtful.indexes.push(slot.index);
      if (slot.name !== undefined) doubtful.names.push(slot.name);
    }
  }
  out += sql.slice(from);
  return { sql: out, params: redactParams(params, hidden, keys, (v, i, name) => secrets?.covers(v) === true || (looksLikeToken(v) && (i !== undefined ? doubtful.indexes.includes(i) : doubtful.names.includes(name!)))), hidden };
}

/**
 * A statement that is JSON (MongoDB's commands as its OpenTelemetry spans give them): its values
 * redacted by their keys, and by the request's own secrets, as a body's are. Undefined for SQL.
 */
function jsonStatement(sql: string, keys: string[], secrets: RequestSecrets | undefined): string | undefined {
  if (!/^\s*[[{]/.test(sql)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(sql);
  } catch {
    return undefined;
  }
  return JSON.stringify(redactValue(hideSecrets(parsed, secrets, looksLikeToken), keys));
}


const unquoted = (literal: string) => (literal.startsWith("'") ? literal.slice(1, -1).replace(/''/g, "'") : literal);

/** Whether a value (by its position, or its name) is hidden for what it is, wherever it goes. */
type ByValue = (value: unknown, index: number | undefined, name: string | undefined) => boolean;

function redactParams(params: unknown, hidden: RedactedStatement['hidden'], keys: string[], byValue: ByValue): unknown {
  if (params === undefined) return undefined;
  const copy = redactValue(params, keys);
  if (Array.isArray(copy)) for (let i = 0; i < copy.length; i++) copy[i] = jsonParam(copy[i], keys);
  else if (isNamed(copy)) for (const name of Object.keys(copy)) copy[name] = jsonParam(copy[name], keys);
  const hideIn = (list: unknown[]) => list.map((v, i) => {
    if (v == null) return v;
    if (hidden.indexes.includes(i)) return hide(v);
    if (!byValue(v, i, undefined)) return v;
    hidden.indexes.push(i);
    return hide(v);
  });
  if (Array.isArray(copy)) {
    // better-sqlite3 takes positional values and one object of named ones, side by side.
    return hideIn(copy.filter((v) => !isNamed(v))).concat(copy.filter(isNamed).map((v) => hideNamed(v, hidden, byValue)));
  }
  return isNamed(copy) ? hideNamed(copy, hidden, byValue) : hideIn([copy])[0];
}

const isNamed = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function hideNamed(values: Record<string, unknown>, hidden: RedactedStatement['hidden'], byValue: ByValue): Record<string, unknown> {
  for (const name of Object.keys(values)) {
    if (values[name] == null) continue;
    // `$2` bound by name (node-sqlite3's and Sequelize's SQLite binding): the second placeholder.
    const numbered = /^[$?:@]?(\d+)$/.exec(name);
    if (hidden.names.includes(name) || (numbered !== null && hidden.indexes.includes(Number(numbered[1]) - 1))) values[name] = hide(values[name]);
    else if (byValue(values[name], numbered === null ? undefined : Number(numbered[1]) - 1, name)) {
      hidden.names.push(name);
      values[name] = hide(values[name]);
    }
  }
  return values;
}

/**
 * A parameter that is JSON text (a column of JSON: `[{"name":"api_token","value":"…"}]`),
 * redacted as the value it holds, as a body's fields are, and written back as JSON text.
 */
function jsonParam(param: unknown, keys: string[]): unknown {
  if (typeof param !== 'string' || !/^\s*[[{]/.test(param) || param.length > 64 * 1024) return param;
  let parsed: unknown;
  try {
    parsed = JSON.parse(param);
  } catch {
    return param;
  }
  const redacted = JSON.stringify(redactValue(parsed, keys));
  return redacted === JSON.stringify(parsed) ? param : redacted;
}

/** A value as SQL: what the runnable statement has in the placeholder's place, or undefined to leave the placeholder. */
function literal(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'string') {
    if (value === REDACTED || /^\[(\w+ \d+ bytes|redacted|circular|too deep|function .*)\]$/.test(value)) return undefined;
    if (/^-?\d+n$/.test(value)) return value.slice(0, -1);
    return `'${value.replace(/'/g, "''")}'`;
  }
  return `'${JSON.stringify(value).replace(/'/g, "''")}'`;
}

/**
 * The statement with its parameters written in, ready to paste into a SQL shell; a parameter that
 * was redacted, or that no literal can stand for, keeps its placeholder.
 */
export function runnableSql(sql: string, params: unknown, hidden: RedactedStatement['hidden']): string {
  if (params === undefined) return sql;
  const list = Array.isArray(params) ? params : [params];
  const positional = list.filter((v) => !isNamed(v));
  const named = Object.assign(Object.create(null) as Record<string, unknown>, ...list.filter(isNamed));
  if (!Array.isArray(params) && isNamed(params)) positional.length = 0;
  let out = '';
  let from = 0;
  for (const slot of slotsOf(sql)) {
    if (slot.kind !== 'param') continue;
    const isHidden = (slot.index !== undefined && hidden.indexes.includes(slot.index)) || (slot.name !== undefined && hidden.names.includes(slot.name));
    const present = slot.name !== undefined ? slot.name in named : slot.index !== undefined && slot.index < positional.length;
    const value = slot.name !== undefined ? named[slot.name] : positional[slot.index ?? -1];
    const text = isHidden || !present ? undefined : literal(value);
    if (text === undefined) continue;
    out += sql.slice(from, slot.start) + text;
    from = slot.end;
  }
  return out + sql.slice(from);
}
