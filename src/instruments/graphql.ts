import dc from 'node:diagnostics_channel';
import type { WorkContext } from '../recording/context.js';
import { insideOf, MAX_QUERIES, requestOf, sinceStart, type MarkEntry } from '../recording/inside.js';

/** What graphql 17 publishes on `graphql:resolve` for each field it resolves (its diagnostics.js). */
interface ResolveMessage {
  fieldName: string;
  parentType: string;
  fieldPath: string;
  /** A field without a resolver of its own: graphql reads the property. Not timed: there is nothing of the app's to time. */
  isDefaultResolver: boolean;
  result?: unknown;
  error?: unknown;
}

const open = new WeakMap<object, { mark: MarkEntry; ctx: WorkContext }>();
let subscribed = false;

/**
 * The time each resolver of the app's takes, from graphql 17's own tracing channel: a span on the
 * request's timeline (scope `graphql`), which the GraphQL panel lists slowest first. What an
 * operation asked and what failed are read from the request's bodies (see redaction/graphql.ts),
 * whatever the graphql version.
 */
export function recordGraphqlResolvers(): void {
  if (subscribed) return;
  subscribed = true;
  const ended = (message: object) => {
    const o = open.get(message);
    if (o === undefined) return;
    open.delete(message);
    o.mark.end = sinceStart(o.ctx);
  };
  dc.tracingChannel('graphql:resolve').subscribe({
    start(message) {
      const m = message as ResolveMessage;
      if (m.isDefaultResolver) return;
      const ctx = requestOf();
      if (ctx === undefined) return;
      const inside = insideOf(ctx);
      if (inside.marks.length >= MAX_QUERIES) return;
      const mark: MarkEntry = {
        name: `${m.parentType}.${m.fieldName}`,
        start: sinceStart(ctx),
        end: -1,
        error: false,
        scope: 'graphql',
        attributes: { 'graphql.field.path': m.fieldPath, 'graphql.parent.type': m.parentType, 'graphql.field.name': m.fieldName },
      };
      inside.marks.push(mark);
      open.set(message as object, { mark, ctx });
    },
    // A resolver that returned a value has its result (or error) by its end; a promise's comes at asyncEnd.
    end(message) {
      if ('result' in (message as object) || 'error' in (message as object)) ended(message as object);
    },
    asyncStart() {},
    asyncEnd: (message) => ended(message as object),
    error(message) {
      const o = open.get(message as object);
      if (o !== undefined) o.mark.error = true;
    },
  });
}
