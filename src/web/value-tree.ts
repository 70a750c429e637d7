import type { ValueNode } from '../recording/snapshot-value.js';

/** Texts longer than this fold to their start. */
const LONG_TEXT = 160;
/** Branches with more entries than this start folded. */
const WIDE = 20;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

/**
 * A dumped value (or a log line's context) as HTML: each object, array, Map, Set and error a
 * <details> that unfolds without a reload, open to `open` levels; a shared reference links to
 * the node it names (ids are prefixed with `scope`, one per value on the page). Every text is
 * escaped here.
 */
export function valueTree(node: ValueNode, scope: string, open = 2): string {
  return `<div class="vt">${nodeHtml(node, scope, 0, open)}</div>`;
}

function nodeHtml(node: ValueNode, scope: string, depth: number, open: number): string {
  switch (node.k) {
    case 'undefined': case 'null': return `<span class="v-null">${node.k}</span>`;
    case 'getter': return '<span class="v-note">[getter, not called]</span>';
    case 'proxy': return '<span class="v-note">[Proxy]</span>';
    case 'cut': return '<span class="v-note">… (more than a dump keeps)</span>';
    case 'boolean': return `<span class="v-bool">${node.v}</span>`;
    case 'number': case 'bigint': return `<span class="v-num">${escape(node.v)}</span>`;
    case 'symbol': case 'regexp': return `<span class="v-sym">${escape(node.v)}</span>`;
    case 'date': return `<span class="v-date">${escape(node.v)}</span> <span class="v-note">Date</span>`;
    case 'string': {
      const cut = node.n > node.v.length ? ` <span class="v-note">… ${node.n - node.v.length} more characters not kept</span>` : '';
      // A long text folds to its start: the rest is a click away.
      if (node.v.length > LONG_TEXT) return `<details class="v-long"><summary><span class="v-str">"${escape(node.v.slice(0, LONG_TEXT))}…"</span> <span class="v-note">(${node.n} characters)</span></summary><span class="v-str">"${escape(node.v)}"</span>${cut}</details>`;
      return `<span class="v-str">"${escape(node.v)}"</span>${cut || (node.n > 20 ? ` <span class="v-note">(${node.n})</span>` : '')}`;
    }
    case 'function': return `<span class="v-fn">${node.c === 'class' ? 'class' : `${node.c === undefined ? '' : `${node.c} `}ƒ`} ${escape(node.v)}</span>`;
    case 'ref': return `<a class="v-ref" href="#${scope}-ref-${node.id}">${node.cycle ? 'circular' : 'shared'} → *${node.id}</a>`;
    case 'bytes': return `<span class="v-class">${escape(node.c)}</span> <span class="v-note">${node.n} ${node.c === 'Buffer' || node.c.endsWith('ArrayBuffer') || node.c === 'DataView' ? 'bytes' : 'items'}</span> <span class="v-bytes">${escape(node.v)}</span>`;
    case 'promise': return `<span class="v-class">Promise</span> <span class="v-note">&lt;${node.v}&gt;</span>`;
  }
  const size = node.n ?? node.e.length;
  const anchor = node.id === undefined ? '' : ` id="${scope}-ref-${node.id}"`;
  const ref = node.id === undefined ? '' : ` <span class="v-note">*${node.id}</span>`;
  const what = node.k === 'error' ? `<span class="v-err">${escape(node.c)}: ${escape(node.v ?? '')}</span>` : `<span class="v-class">${escape(node.c)}</span>${node.k === 'object' ? '' : ` <span class="v-note">(${node.n === -1 ? '…' : size})</span>`}`;
  if (node.n === -1) return `${what}${ref} <span class="v-note">… (deeper than a dump keeps)</span>`;
  if (node.e.length === 0 && node.stack === undefined) return `<span${anchor}>${what}${ref} <span class="v-note">${node.k === 'array' ? '[]' : '{}'}</span></span>`;
  const items = node.e.map(([key, value]) => {
    const name = typeof key === 'string' ? (node.k === 'array' || node.k === 'set' ? `<span class="v-idx">${escape(key)}</span>` : `<span class="v-key">${escape(key)}</span>`) : nodeHtml(key, scope, depth + 1, open);
    return `<li>${name}${node.k === 'map' ? ' <span class="v-note">=&gt;</span> ' : ': '}${nodeHtml(value, scope, depth + 1, open)}</li>`;
  });
  if (node.n !== undefined && node.n > node.e.length) items.push(`<li class="v-note">… ${node.n - node.e.length} more</li>`);
  const stack = node.stack === undefined ? '' : `<pre class="v-stack">${escape(node.stack)}</pre>`;
  // Open to `open` levels, but a long list starts folded: its size is in its summary.
  const unfolded = depth < open && node.e.length <= WIDE;
  return `<details${anchor}${unfolded ? ' open' : ''}><summary>${what}${ref}</summary>${stack}<ul>${items.join('')}</ul></details>`;
}

/** Plain JSON (a log line's context) as a value node, for the same tree. */
export function jsonNode(value: unknown): ValueNode {
  if (value === null) return { k: 'null' };
  switch (typeof value) {
    case 'undefined': return { k: 'undefined' };
    case 'boolean': return { k: 'boolean', v: value };
    case 'number': return { k: 'number', v: String(value) };
    case 'string': return { k: 'string', v: value, n: value.length };
    case 'object': {
      if (Array.isArray(value)) return { k: 'array', c: 'Array', e: value.map((v, i) => [String(i), jsonNode(v)]) };
      return { k: 'object', c: 'Object', e: Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, jsonNode(v)]) };
    }
    default: return { k: 'string', v: String(value), n: String(value).length };
  }
}
