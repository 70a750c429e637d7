import type { Dump } from '../recording/dump.js';
import type { ValueNode } from '../recording/snapshot-value.js';
import { hide, REDACTED } from './hidden.js';
import { isContainer, isSecretKey, isSessionId, redactText } from './redact.js';

/**
 * Dumps as stored: every text under a key named like a secret hidden (a Map's key too), any
 * other text redacted as text is (a password in a URL, `token=…`), an error's message and stack
 * too. The record's gate then hides, here as everywhere, what any other panel hid.
 */
export function redactDumps(dumps: Dump[], keys: string[]): Dump[] {
  return dumps.map((d) => ({ ...d, label: d.label === undefined ? undefined : redactText(d.label, keys), value: redactNode(d.value, keys, false) }));
}

function redactNode(node: ValueNode, keys: string[], secret: boolean, session = false): ValueNode {
  switch (node.k) {
    case 'string': {
      if (secret && node.v !== '') return { k: 'string', v: hide(node.v), n: REDACTED.length };
      const v = redactText(node.v, keys);
      return v === node.v ? node : { ...node, v };
    }
    // Bytes under a secret's name (a signing key in a Buffer) keep their class and length only.
    case 'bytes':
      return secret ? { ...node, v: REDACTED } : node;
    case 'object': case 'array': case 'map': case 'set': case 'error':
      return {
        ...node,
        ...(node.v === undefined ? {} : { v: redactText(node.v, keys) }),
        ...(node.stack === undefined ? {} : { stack: redactText(node.stack, keys) }),
        e: node.e.map(([key, value]) => {
          const name = typeof key === 'string' ? (node.k === 'object' || node.k === 'error' ? key : '') : key.k === 'string' ? key.v : '';
          // A `session` object holds attributes, each redacted by its own name, its id hidden (see isContainer).
          const contained = value.k === 'object' && name !== '' && isContainer(name, {});
          const under = secret || (name !== '' && isSecretKey(name, keys) && !contained) || (session && name !== '' && isSessionId(name));
          return [typeof key === 'string' ? key : redactNode(key, keys, false), redactNode(value, keys, under, contained)];
        }),
      };
    default:
      return node;
  }
}
