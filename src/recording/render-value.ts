import type { ValueNode } from './snapshot-value.js';

/** A snapshot as text, as util.inspect would show the value it was taken of: what dump() prints outside a recording. */
export function renderValue(node: ValueNode, indent = ''): string {
  switch (node.k) {
    case 'undefined': case 'null': return node.k;
    case 'getter': return '[Getter]';
    case 'proxy': return '[Proxy]';
    case 'cut': return '…';
    case 'boolean': return String(node.v);
    case 'number': case 'bigint': case 'symbol': case 'date': case 'regexp': return node.v;
    case 'string': return JSON.stringify(node.v) + (node.n > node.v.length ? ` … (${node.n} characters)` : '');
    case 'function': return `[${node.c === 'class' ? 'class' : `${node.c === undefined ? '' : `${node.c[0].toUpperCase()}${node.c.slice(1)}`}Function`} ${node.v}]`;
    case 'ref': return `[${node.cycle ? 'Circular' : 'Shared'} *${node.id}]`;
    case 'bytes': return `<${node.c} ${node.v}>${node.n > 32 ? ` (${node.n})` : ''}`;
    case 'promise': return `Promise { <${node.v}> }`;
  }
  const inner = `${indent}  `;
  const ref = node.id === undefined ? '' : `<ref *${node.id}> `;
  const more = node.n === -1 ? [`${inner}… (deeper than shown)`] : node.n !== undefined && node.n > node.e.length ? [`${inner}… ${node.n - node.e.length} more`] : [];
  const entries = node.e.map(([key, value]) => {
    const shown = renderValue(value, inner);
    if (node.k === 'array' || node.k === 'set') return `${inner}${shown}`;
    return `${inner}${typeof key === 'string' ? (/^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key)) : renderValue(key, inner)}${node.k === 'map' ? ' =>' : ':'} ${shown}`;
  }).concat(more);
  const head = node.k === 'error' ? `${node.stack ?? `${node.c}: ${node.v ?? ''}`}` : `${node.c === 'Object' || (node.c === 'Array' && node.k === 'array') ? '' : `${node.c}${node.k === 'map' || node.k === 'set' ? `(${node.n ?? node.e.length})` : ''} `}`;
  const [open, close] = node.k === 'array' ? ['[', ']'] : ['{', '}'];
  if (node.k === 'error') return entries.length === 0 ? ref + head : `${ref}${head} ${open}\n${entries.join(',\n')}\n${indent}${close}`;
  return entries.length === 0 ? `${ref}${head}${open}${close}` : `${ref}${head}${open}\n${entries.join(',\n')}\n${indent}${close}`;
}
