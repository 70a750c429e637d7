import type { Request } from 'express';
import type { Collector } from './collector.js';
import { plain } from './plain.js';
import { redactValue } from './redact.js';

export interface RoutingData {
  method: string;
  path: string;
  /** The matched route's path pattern, if a route answered. */
  route?: string;
  params: unknown;
}

export const routing: Collector<RoutingData> = {
  id: 'routing',
  title: 'Routing',
  collect(ctx, options) {
    const req = ctx.req as Request;
    return {
      method: req.method,
      path: (req.originalUrl ?? req.url ?? '').split('?')[0],
      route: ctx.route,
      params: redactValue(plain(ctx.params ?? {}), options.redactKeys),
    };
  },
  badge: (data) => data.route ?? (data.path ? 'no route' : undefined),
};
