import type { WorkContext } from '../recording/context.js';
import { insideOf, MAX_QUERIES, queryEnded, queryStarted, requestOf, sinceStart, type CallEntry, type MarkEntry, type QueryEntry } from '../recording/inside.js';

/** What the processor reads of a span (sdk-trace's ReadableSpan). */
interface EndedSpan {
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code: number; message?: string };
  instrumentationScope?: { name: string };
  /** 1.x SDKs. */
  instrumentationLibrary?: { name: string };
}

/**
 * Instrumentations whose work the profiler records itself, from the libraries' own hooks: their
 * spans would show it twice. A span from any other (Prisma's, the AI SDK's, Mongo's, the app's
 * own tracer) is shown.
 */
/** @anthropic-ai/sdk's own spans (`com.anthropic.sdk.typescript[.<platform>]`): its calls are recorded from the wire (ai-sdks.ts). */
const ANTHROPIC_SCOPE = 'com.anthropic.sdk.typescript';
const RECORDED_NATIVELY = new Set([
  '@opentelemetry/instrumentation-http', '@opentelemetry/instrumentation-express', '@opentelemetry/instrumentation-undici',
  '@opentelemetry/instrumentation-pg', '@opentelemetry/instrumentation-mysql', '@opentelemetry/instrumentation-mysql2',
  '@opentelemetry/instrumentation-ioredis', '@opentelemetry/instrumentation-redis', '@opentelemetry/instrumentation-redis-4',
  '@opentelemetry/instrumentation-knex', '@opentelemetry/instrumentation-pino', '@opentelemetry/instrumentation-winston',
  '@opentelemetry/instrumentation-nestjs-core', '@opentelemetry/instrumentation-connect', '@opentelemetry/instrumentation-router',
  '@opentelemetry/instrumentation-better-sqlite3',
]);

const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;

interface Open {
  ctx: WorkContext;
  start: number;
}

/**
 * An OpenTelemetry SpanProcessor (`new NodeTracerProvider({ spanProcessors: [profiler.spanProcessor(), …] })`):
 * each span that starts inside a request or command (the processor hears it synchronously, in
 * the code that starts it) is timed on the profiler's clock and, when it ends, shown where it
 * belongs: a database span on the db panel, an HTTP client span on the HTTP client panel, any
 * other on the timeline with its attributes.
 */
export function spanProcessor() {
  const open = new WeakMap<object, Open>();
  return {
    onStart(span: object) {
      const ctx = requestOf();
      if (ctx === undefined) return;
      open.set(span, { ctx, start: sinceStart(ctx) });
      // A request the app's tracing did not see start (no HTTP instrumentation) joins the trace of
      // its first span, searching that trace finds it; a client's traceparent names it first.
      if (ctx.trace === undefined && (ctx as { req?: { headers?: Record<string, unknown> } }).req?.headers?.traceparent === undefined) {
        try {
          const sc = (span as { spanContext?: () => { traceId?: unknown; spanId?: unknown } }).spanContext?.();
          if (typeof sc?.traceId === 'string' && typeof sc.spanId === 'string' && /^[0-9a-f]{32}$/.test(sc.traceId) && !/^0+$/.test(sc.traceId)) ctx.trace = { traceId: sc.traceId, spanId: sc.spanId };
        } catch {
          // A span that cannot say its trace: the request keeps none.
        }
      }
    },
    onEnd(span: EndedSpan) {
      const o = open.get(span);
      if (o === undefined) return;
      open.delete(span);
      const scope = span.instrumentationScope?.name ?? span.instrumentationLibrary?.name ?? '';
      if (RECORDED_NATIVELY.has(scope) || scope.startsWith(ANTHROPIC_SCOPE)) return;
      try {
        bridged(o.ctx, span, scope, o.start, sinceStart(o.ctx));
      } catch (err) {
        o.ctx.recorder.failed(err);
      }
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

function bridged(ctx: WorkContext, span: EndedSpan, scope: string, start: number, end: number): void {
  const a = span.attributes ?? {};
  const failed = span.status?.code === STATUS_ERROR;
  const error = failed ? new Error(span.status?.message || `${span.name} failed`) : undefined;
  const sql = text(a['db.query.text']) ?? text(a['db.statement']);
  if (sql !== undefined) {
    // Its line is where the library ended it: no caller rather than a wrong one.
    const entry: QueryEntry = queryStarted(ctx, text(a['db.system.name']) ?? text(a['db.system']) ?? scope, sql, undefined, '');
    entry.start = start;
    entry.caller = undefined;
    const rows = a['db.response.returned_rows'];
    queryEnded(ctx, entry, typeof rows === 'number' ? rows : undefined, error);
    return;
  }
  const url = text(a['url.full']) ?? text(a['http.url']);
  const method = text(a['http.request.method']) ?? text(a['http.method']);
  const inside = insideOf(ctx);
  if (span.kind === SPAN_KIND_CLIENT && url !== undefined && method !== undefined) {
    inside.callCount++;
    if (inside.calls.length >= MAX_QUERIES) return;
    const status = a['http.response.status_code'] ?? a['http.status_code'];
    const call: CallEntry = {
      api: 'otel', method, url, start, end, status: typeof status === 'number' ? status : undefined, error,
      requestHeaders: {}, responseHeaders: {}, requestSize: undefined, responseSize: undefined, caller: undefined,
    };
    inside.calls.push(call);
    return;
  }
  if (inside.marks.length >= MAX_QUERIES) return;
  const mark: MarkEntry = { name: span.name, start, end, error: failed, attributes: attributesOf(a), scope: scope || undefined };
  inside.marks.push(mark);
}

const MAX_ATTRIBUTES = 64;

/** A span's attributes as stored: the first 64, values as OpenTelemetry allows them (scalars and arrays of them). */
function attributesOf(a: Record<string, unknown>): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  let n = 0;
  for (const key in a) {
    if (++n > MAX_ATTRIBUTES) break;
    const v = a[key];
    (out ??= {})[key] = Array.isArray(v) ? v.slice(0, 32) : typeof v === 'string' && v.length > 2000 ? `${v.slice(0, 2000)}…` : v;
  }
  return out;
}
