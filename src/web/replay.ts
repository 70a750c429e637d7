import type { BodyData } from '../redaction/body.js';
import { REDACTED } from '../redaction/redact.js';

/** What a request is re-sent from: its stored, redacted parts. */
export interface Replayable {
  method: string;
  /** Absolute. */
  url: string;
  headers: Record<string, unknown>;
  body?: BodyData;
}

/** A value with the secrets the profiler took out as named holes: text, then a variable, then text… */
export interface Holed {
  parts: string[];
  vars: string[];
}

/**
 * The variables a command's holes become: one fixed prefix, numbered, each listed with the field
 * it stands for. Never a name a client chose: a field named HOME, AWS_SECRET_ACCESS_KEY or
 * GITHUB_TOKEN would have sent the developer's own value wherever the command goes.
 */
export class Holes {
  readonly legend: [string, string][] = [];

  /** Each `[redacted]` in `text` becomes the next variable, noted as the value of the `name=` or `"name":` before it, else of `field`. */
  cut(text: string, field: string): Holed {
    const parts = text.split(REDACTED);
    const vars: string[] = [];
    for (let i = 0; i < parts.length - 1; i++) {
      // A bounded tail: the name is just before its hole, and the pattern is quadratic in what it is given.
      const named = /([A-Za-z_][\w.-]*)["']?\s*[=:]\s*["']?$/.exec(parts[i].slice(-NAME_TAIL));
      const name = `WP_SECRET_${this.legend.length + 1}`;
      this.legend.push([name, label(named?.[1] ?? field)]);
      vars.push(name);
    }
    return { parts, vars };
  }
}

/** How far before a hole its field's name is looked for. */
const NAME_TAIL = 96;

/** A field's name as a comment may show it: the client chose it, so only plain characters, and not many. */
const label = (name: string) => name.replace(/[^\w.-]+/g, '_').slice(0, 40) || 'value';

/** Headers curl and fetch set themselves, from the URL and the body. */
const OWN_HEADERS = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'accept-encoding', 'keep-alive']);

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
export function bodyOf(body: BodyData | undefined, holes: Holes): { holed?: Holed; note?: string } {
  if (body === undefined || body.size === 0) return {};
  if (body.truncated) return { note: `the body (${body.size} bytes) was cut at the profiler's body limit: it is not sent` };
  if (body.kind === 'binary') return { note: `the body (${body.size} bytes of ${body.contentType ?? 'binary data'}) was not kept: it is not sent` };
  if (body.json !== undefined) {
    const form = /x-www-form-urlencoded/i.test(body.contentType ?? '') && body.json !== null && typeof body.json === 'object';
    if (form) {
      const pairs = Object.entries(body.json as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
      // Encoded pair by pair, so that a redacted value stays a hole the variable fills.
      const text = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v === REDACTED ? REDACTED : encodeURIComponent(v)}`).join('&');
      return { holed: holes.cut(text, 'body') };
    }
    return { holed: holes.cut(JSON.stringify(body.json), 'body') };
  }
  return body.text === undefined ? {} : { holed: holes.cut(body.text, 'body') };
}

export function headersOf(headers: Record<string, unknown>, holes: Holes): [string, Holed][] {
  const out: [string, Holed][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (OWN_HEADERS.has(name.toLowerCase())) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, holes.cut(`${name}: ${String(v)}`, name)]);
  }
  return out;
}

/** Comment lines: the notes, then (for a shell) the variables to set and the field each stands for. */
const preamble = (notes: string[], comment: string, holes?: Holes) => {
  const lines = notes.map((n) => `${comment} ${n}`);
  if (holes !== undefined && holes.legend.length > 0) {
    lines.push(`${comment} The profiler redacted these values: export them first.`);
    for (const [name, field] of holes.legend) lines.push(`${comment}   ${name}: ${field}`);
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
};

/**
 * Where the command goes. A request's URL was made from the Host its client sent, which anyone
 * can set: the command is aimed at the origin the profiler is being read on (this app), and a
 * recorded Host that is not it is said loudly. An outgoing call's URL is what the app called.
 */
export function target(r: Replayable, served: string | undefined, notes: string[]): string {
  if (served === undefined) return r.url;
  let recorded: URL;
  try {
    recorded = new URL(r.url);
  } catch {
    return served;
  }
  if (recorded.origin !== served) {
    notes.push(`WARNING: this request was sent to ${JSON.stringify(recorded.origin)}, which is not the app this profiler serves (${served}): the command goes to ${served}.`);
  }
  return served + recorded.pathname + recorded.search;
}

/**
 * The request as a curl command: every part quoted for a POSIX shell (the method too), so no
 * value can break out of its argument; redacted values are "$WP_SECRET_n" variables, listed in a
 * comment with the field each stands for. `served` is the origin of the app (see target()).
 */
export function asCurl(r: Replayable, served?: string): string {
  const holes = new Holes();
  const notes: string[] = [];
  const method = r.method.toUpperCase();
  const args = [method === 'HEAD' ? '--head' : `-X ${quote(method)}`, shellWord(holes.cut(target(r, served, notes), 'url')), '--globoff', '--path-as-is'];
  for (const [, header] of headersOf(r.headers, holes)) args.push(`-H ${shellWord(header)}`);
  const body = bodyOf(r.body, holes);
  if (body.note) notes.push(`Note: ${body.note}.`);
  if (body.holed) args.push(`--data-raw ${shellWord(body.holed)}`);
  const [first, url, ...rest] = args;
  return `${preamble(notes, '#', holes)}curl ${first} ${url} \\\n  ${rest.join(' \\\n  ')}\n`;
}

/** A JavaScript string of a value with holes: a template literal whose holes are the variables. */
export function jsString(h: Holed): string {
  if (h.vars.length === 0) return JSON.stringify(h.parts[0]);
  // A template literal reads CR LF and CR as LF: a CR is written as its escape, so the bytes sent are the recorded ones.
  const escape = (s: string) => s.replace(/[\\`]/g, (c) => `\\${c}`).replace(/\$\{/g, '\\${').replace(/\r/g, '\\r');
  return `\`${h.parts.map((p, i) => escape(p) + (i < h.vars.length ? `\${${h.vars[i]}}` : '')).join('')}\``;
}

/** The request as a fetch() call; redacted values are WP_SECRET_n constants to fill in, each with the field it stands for. */
export function asFetch(r: Replayable, served?: string): string {
  const holes = new Holes();
  const notes: string[] = [];
  const url = jsString(holes.cut(target(r, served, notes), 'url'));
  const headers = headersOf(r.headers, holes).map(([name, h]) => {
    const value: Holed = { parts: [h.parts[0].slice(name.length + 2), ...h.parts.slice(1)], vars: h.vars };
    return `    ${JSON.stringify(name)}: ${jsString(value)},`;
  });
  const body = bodyOf(r.body, holes);
  if (body.note) notes.push(`Note: ${body.note}.`);
  const lines = [`await fetch(${url}, {`, `  method: ${JSON.stringify(r.method.toUpperCase())},`];
  if (headers.length > 0) lines.push('  headers: {', ...headers, '  },');
  if (body.holed) lines.push(`  body: ${jsString(body.holed)},`);
  lines.push('});');
  const consts = holes.legend.map(([name, field]) => `const ${name} = ''; // redacted by the profiler (${field}): fill in`);
  return `${preamble(notes, '//')}${consts.length ? `${consts.join('\n')}\n` : ''}${lines.join('\n')}\n`;
}
