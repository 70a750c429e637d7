/**
 * OpenTelemetry without depending on it: the API keeps its state in a global (one per major
 * version), which holds the context manager; the active span is a value of the active context.
 * Nothing here loads unless the app has set up OpenTelemetry itself.
 */
const API_GLOBAL = Symbol.for('opentelemetry.js.api.1');
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');

interface SpanContext {
  traceId: string;
  spanId: string;
}

const INVALID_TRACE = '00000000000000000000000000000000';

/** The trace the code running now is part of, when the app traces with OpenTelemetry. */
export function activeTrace(): SpanContext | undefined {
  const api = (globalThis as Record<symbol, { context?: { active(): { getValue(key: symbol): unknown } } } | undefined>)[API_GLOBAL];
  if (api?.context === undefined) return undefined;
  try {
    const span = api.context.active().getValue(SPAN_KEY) as { spanContext?: () => SpanContext } | undefined;
    const sc = span?.spanContext?.();
    return sc === undefined || sc.traceId === INVALID_TRACE ? undefined : { traceId: sc.traceId, spanId: sc.spanId };
  } catch {
    return undefined;
  }
}

/** A W3C traceparent (`00-<trace>-<span>-<flags>`), as a client that traces sends it: what a request without the app's own tracing still belongs to. */
export function traceOfHeader(value: unknown): SpanContext | undefined {
  const m = typeof value === 'string' ? /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(value.trim()) : null;
  return m === null || m[1] === INVALID_TRACE ? undefined : { traceId: m[1], spanId: m[2] };
}
