import type { BodyData } from '../collectors/body.js';
import { REDACTED } from '../collectors/redact.js';

/** What a request is re-sent from: its stored, redacted parts. */
export interface Replayable {
  method: string;
  /** Absolute. */
  url: string;
  headers: Record<string, unknown>;
  body?: BodyData;
}

/** A value with the secrets the profiler took out as named holes: text, then a variable, then text… */
interface Holed {
  parts: string[];
  vars: string[];
}

/** Headers curl and fetch set themselves, from the URL and the body. */
const OWN_HEADERS = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'accept-encoding', 'keep-alive']);

const varName = (name: string) => {
  const v = name.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_+|_+$/g, '') || 'SECRET';
  return /^\d/.test(v) ? `_${v}` : v;
};

/**
 * Each `[redacted]` in a value becomes a variable named after what it was the value of: the
 * `name=` or `"name":` just before it, else `field` (the header's or parameter's name).
 */
function holes(text: string, field: string): Holed {
  const pieces = text.split(REDACTED);
  const vars: string[] = [];
  for (let i = 0; i < pieces.length - 1; i++) {
    const named = /([A-Za-z_][\w.-]*)["']?\s*[=:]\s*["']?$/.exec(pieces[i]);
    vars.push(varName(named?.[1] ?? field));
  }
  return { parts: pieces, vars };
}

/** POSIX shell: single quotes hold anything but a single quote, which is closed, escaped and reopened. */
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A shell word whose secret parts are "$VARIABLES", everything else single-quoted. */
function shellWord(value: Holed): string {
  let word = '';
  value.parts.forEach((part, i) => {
    if (part !== '' || (i === 0 && value.vars.length === 0)) word += quote(part);
    if (i < value.vars.length) word += `"$${value.vars[i]}"`;
  });
  return word || "''";
}

/** A body to send again, as text with holes, or why it cannot be. */
function bodyOf(body: BodyData | undefined): { holed?: Holed; note?: string } {
  if (body === undefined || body.size === 0) return {};
  if (body.truncated) return { note: `the body (${body.size} bytes) was cut at the profiler's body limit: it is not sent` };
  if (body.kind === 'binary') return { note: `the body (${body.size} bytes of ${body.contentType ?? 'binary data'}) was not kept: it is not sent` };
  if (body.json !== undefined) {
    const form = /x-www-form-urlencoded/i.test(body.contentType ?? '') && body.json !== null && typeof body.json === 'object';
    if (form) {
      const pairs = Object.entries(body.json as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
      // Encoded pair by pair, so that a redacted value stays a hole the variable fills.
      const text = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v === REDACTED ? REDACTED : encodeURIComponent(v)}`).join('&');
      return { holed: holes(text, 'body') };
    }
    return { holed: holes(JSON.stringify(body.json), 'body') };
  }
  return body.text === undefined ? {} : { holed: holes(body.text, 'body') };
}

function headersOf(headers: Record<string, unknown>): [string, Holed][] {
  const out: [string, Holed][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (OWN_HEADERS.has(name.toLowerCase())) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, holes(`${name}: ${String(v)}`, name)]);
  }
  return out;
}

const preamble = (vars: Set<string>, notes: string[], comment: string) => {
  const lines = notes.map((n) => `${comment} Note: ${n}.`);
  if (vars.size > 0) lines.unshift(`${comment} The profiler redacted these values: set them first.`, `${comment}   ${[...vars].join(' ')}`);
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
};

/**
 * The request as a curl command: every part quoted for a POSIX shell (the method too), so no
 * value can break out of its argument; redacted values are "$VARIABLES" named in a comment.
 */
export function asCurl(r: Replayable): string {
  const vars = new Set<string>();
  const notes: string[] = [];
  const word = (h: Holed) => {
    h.vars.forEach((v) => vars.add(v));
    return shellWord(h);
  };
  const method = r.method.toUpperCase();
  const args = [method === 'HEAD' ? '--head' : `-X ${quote(method)}`, word(holes(r.url, 'url')), '--globoff', '--path-as-is'];
  for (const [, header] of headersOf(r.headers)) args.push(`-H ${word(header)}`);
  const body = bodyOf(r.body);
  if (body.note) notes.push(body.note);
  if (body.holed) args.push(`--data-raw ${word(body.holed)}`);
  const [first, url, ...rest] = args;
  return `${preamble(vars, notes, '#')}curl ${first} ${url} \\\n  ${rest.join(' \\\n  ')}\n`;
}

/** A JavaScript string of a value with holes: a template literal whose holes are the variables. */
function jsString(h: Holed): string {
  if (h.vars.length === 0) return JSON.stringify(h.parts[0]);
  const escape = (s: string) => s.replace(/[\\`]/g, (c) => `\\${c}`).replace(/\$\{/g, '\\${');
  return `\`${h.parts.map((p, i) => escape(p) + (i < h.vars.length ? `\${${h.vars[i]}}` : '')).join('')}\``;
}

/** The request as a fetch() call; redacted values are constants to fill in. */
export function asFetch(r: Replayable): string {
  const vars = new Set<string>();
  const notes: string[] = [];
  const js = (h: Holed) => {
    h.vars.forEach((v) => vars.add(v));
    return jsString(h);
  };
  const headers = headersOf(r.headers).map(([name, h]) => {
    const value: Holed = { parts: [h.parts[0].slice(name.length + 2), ...h.parts.slice(1)], vars: h.vars };
    return `    ${JSON.stringify(name)}: ${js(value)},`;
  });
  const body = bodyOf(r.body);
  if (body.note) notes.push(body.note);
  const lines = [`await fetch(${js(holes(r.url, 'url'))}, {`, `  method: ${JSON.stringify(r.method.toUpperCase())},`];
  if (headers.length > 0) lines.push('  headers: {', ...headers, '  },');
  if (body.holed) lines.push(`  body: ${js(body.holed)},`);
  lines.push('});');
  const consts = [...vars].map((v) => `const ${v} = ''; // redacted by the profiler: fill in`);
  return `${preamble(new Set(), notes, '//')}${consts.length ? `${consts.join('\n')}\n` : ''}${lines.join('\n')}\n`;
}
