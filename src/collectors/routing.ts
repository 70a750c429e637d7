import type { CorePanel } from './collector.js';
import { redactUrl, redactValue } from './redact.js';
import { isEmpty, orEmpty, pagePathOf } from './derive.js';

export interface RoutingData {
  method: string;
  path: string;
  /** The matched route's path pattern, if a route answered. */
  route?: string;
  params: unknown;
}

export const routing: CorePanel<RoutingData> = {
  id: 'routing',
  title: 'Routing',
  collect: (s, options) => ({
    method: s.request.method,
    path: redactUrl(s.request.url.split('?')[0], options.redactKeys, s.params),
    route: s.route,
    params: redactValue(s.params, options.redactKeys),
  }),
  pack(d, summary) {
    const stored = d as unknown as Record<string, unknown>;
    if (d.method === summary.method) stored.method = undefined;
    if (d.path === pagePathOf(summary)) stored.path = undefined;
    if (isEmpty(d.params)) stored.params = undefined;
    return d;
  },
  unpack: (s: Partial<RoutingData>, summary) => ({
    method: s.method ?? summary.method,
    path: s.path ?? pagePathOf(summary),
    route: s.route,
    params: orEmpty(s.params),
  }),
  badge: (data) => data.route ?? (data.path ? 'no route' : undefined),
};
