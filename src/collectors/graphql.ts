import { graphqlOperations, type GraphqlOperation } from '../redaction/graphql.js';
import type { CorePanel } from './collector.js';

export interface ResolverData {
  /** The field path (`user.posts.0.title`) and the type.field it resolves. */
  path: string;
  field?: string;
  start: number;
  duration: number;
  error?: boolean;
}

export interface GraphqlData {
  operations: GraphqlOperation[];
  errors: number;
  /** The slowest resolvers, slowest first: from graphql 17's own channels, or OpenTelemetry's graphql instrumentation. */
  resolvers?: ResolverData[];
  /** Resolvers timed in all. */
  resolved?: number;
}

/** Where resolver timings come from: the profiler's graphql 17 instrument, OpenTelemetry's graphql instrumentation. */
const RESOLVER_SCOPES = new Set(['graphql', '@opentelemetry/instrumentation-graphql']);
const SHOWN_RESOLVERS = 20;

/** A GraphQL request's operations, variables and errors, read from its bodies; its slowest resolvers, where they were timed. */
export const graphql: CorePanel<GraphqlData> = {
  id: 'graphql',
  title: 'GraphQL',
  collect(s) {
    if (s.command !== undefined) return undefined;
    const operations = graphqlOperations(s.request.body, s.request.query, s.response.body);
    if (operations === undefined) return undefined;
    const data: GraphqlData = { operations, errors: operations.reduce((n, op) => n + (op.errors?.length ?? 0), 0) };
    const timed = (s.inside?.marks ?? []).filter((m) => m.scope !== undefined && RESOLVER_SCOPES.has(m.scope) && m.name !== 'graphql.execute' && m.name !== 'graphql.parse' && m.name !== 'graphql.validate');
    if (timed.length > 0) {
      data.resolved = timed.length;
      data.resolvers = timed
        .map((m) => {
          const a = m.attributes ?? {};
          const path = String(a['graphql.field.path'] ?? m.name);
          const type = a['graphql.parent.type'] ?? a['graphql.field.parent'];
          const field = a['graphql.field.name'];
          return { path, ...(type !== undefined && field !== undefined ? { field: `${type}.${field}` } : {}), start: m.start, duration: Math.round((m.end - m.start) * 1000) / 1000, ...(m.error ? { error: true } : {}) };
        })
        .sort((a, b) => b.duration - a.duration)
        .slice(0, SHOWN_RESOLVERS);
    }
    return data;
  },
  badge: (data) => (data.errors > 0 ? `${data.errors} ${data.errors === 1 ? 'error' : 'errors'}` : data.operations.length),
};
