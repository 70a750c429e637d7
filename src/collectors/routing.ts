import type { CorePanel } from './collector.js';
import { redactValue } from './redact.js';

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
  badge: (data) => data.route ?? (data.path ? 'no route' : undefined),
};
