import { METHODS } from 'node:http';
import { callerFrame } from './caller.js';

/**
 * Where the app mounted each router layer: the app's line of its app.use(), router.use() or
 * app.post() call, found as it is made (once, at start-up). A middleware that refuses a request
 * without throwing (a rate limiter, passport) is then named with the line a reader can open.
 */
const mounted = new WeakMap<object, string>();

export const mountOf = (layer: object): string | undefined => mounted.get(layer);

type Method = (this: { stack?: unknown[] }, ...args: unknown[]) => unknown;
const hooked = new WeakSet<object>();
const ROUTE_METHODS = ['all', ...METHODS.map((m) => m.toLowerCase())];

/** Wrap a router's use() and its routes' method calls (Express 4's and router 2's alike), once per prototype. */
export function hookMounts(routerProto: Record<string, unknown>, routeProto: Record<string, unknown> | undefined): void {
  hookMethod(routerProto, 'use');
  if (routeProto !== undefined) for (const name of ROUTE_METHODS) hookMethod(routeProto, name);
}

function hookMethod(proto: Record<string, unknown>, name: string): void {
  const original = proto[name];
  if (typeof original !== 'function' || hooked.has(original)) return;
  const wrapper = {
    [name](this: { stack?: unknown[] }, ...args: unknown[]) {
      const before = Array.isArray(this?.stack) ? this.stack.length : -1;
      const result = (original as Method).apply(this, args);
      if (before >= 0 && Array.isArray(this.stack) && this.stack.length > before) {
        const at = callerFrame();
        if (at !== undefined) for (let i = before; i < this.stack.length; i++) if (typeof this.stack[i] === 'object' && this.stack[i] !== null) mounted.set(this.stack[i] as object, at);
      }
      return result;
    },
  }[name] as Method;
  Object.defineProperty(wrapper, 'length', { value: (original as Method).length });
  hooked.add(wrapper);
  proto[name] = wrapper;
}
