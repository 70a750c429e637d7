import type { CorePanel } from './collector.js';
import { redactValue } from './redact.js';
import { isEmpty, orEmpty, pathOf } from './derive.js';

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
    path: s.request.url.split('?')[0],
    route: s.route,
    params: redactValue(s.params, options.redactKeys),
  }),
  pack: (d, summary) => ({
    method: d.method === summary.method ? undefined : d.method,
    path: d.path === pathOf(summary).split('?')[0] ? undefined : d.path,
    route: d.route,
    params: isEmpty(d.params) ? undefined : d.params,
  }),
  unpack: (s: Partial<RoutingData>, summary) => ({
    method: s.method ?? summary.method,
    path: s.path ?? pathOf(summary).split('?')[0],
    route: s.route,
    params: orEmpty(s.params),
  }),
  badge: (data) => data.route ?? (data.path ? 'no route' : undefined),
};
