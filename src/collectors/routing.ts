import type { CorePanel } from './collector.js';
import { orEmpty, pagePathOf } from './derive.js';
import { isControllerMethod } from '../recording/handler-name.js';

export interface RoutingData {
  method: string;
  path: string;
  /** The matched route's path pattern, if a route answered. */
  route?: string;
  /** The handler a framework named for it: Nest's `Controller.method`. */
  handler?: string;
  params: unknown;
}

export const routing: CorePanel<RoutingData> = {
  id: 'routing',
  title: 'Routing',
  collect: (s) => (s.command !== undefined ? undefined : {
    method: s.request.method,
    path: s.request.url.split('?')[0],
    route: s.route,
    handler: s.spans.findLast((span) => span.kind === 'handler' && isControllerMethod(span.name))?.name,
    params: s.params,
  }),
  unpack: (s: Partial<RoutingData>, summary) => ({
    method: s.method ?? summary.method,
    path: s.path ?? pagePathOf(summary),
    route: s.route,
    handler: s.handler,
    params: orEmpty(s.params),
  }),
  badge: (data) => data.route ?? (data.path ? 'no route' : undefined),
};
