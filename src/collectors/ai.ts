import type { StoredAiCall } from '../redaction/ai.js';
import type { MarkEntry } from '../recording/inside.js';
import type { CorePanel } from './collector.js';
import { duration } from './inside-layers.js';

export interface AiCallData extends StoredAiCall {
  n: number;
  duration: number;
  /** A stream's time to its first chunk. */
  ttft?: number;
  /** Where the call was read from: the SDK's wire, its own telemetry, or an OpenTelemetry gen_ai span. */
  source: 'wire' | 'telemetry' | 'span';
}

export interface AiData {
  count: number;
  errors: number;
  time: number;
  inputTokens: number;
  outputTokens: number;
  calls: AiCallData[];
}

const first = (v: unknown): string | undefined => (Array.isArray(v) ? (v.length > 0 ? String(v[0]) : undefined) : typeof v === 'string' ? v : undefined);
const count = (v: unknown): number | undefined => (typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined);

/** An OpenTelemetry span named by the GenAI conventions (`gen_ai.*`), as any instrumentation of a model call makes it. */
function spanCall(m: MarkEntry): StoredAiCall | undefined {
  const a = m.attributes;
  if (a === undefined || (a['gen_ai.operation.name'] === undefined && a['gen_ai.request.model'] === undefined)) return undefined;
  const call: StoredAiCall = { library: m.scope ?? 'OpenTelemetry', start: m.start, end: m.end };
  const provider = first(a['gen_ai.provider.name'] ?? a['gen_ai.system']);
  const model = first(a['gen_ai.response.model'] ?? a['gen_ai.request.model']);
  if (provider) call.provider = provider;
  if (model) call.model = model;
  const operation = first(a['gen_ai.operation.name']);
  if (operation) call.operation = operation;
  const input = count(a['gen_ai.usage.input_tokens']);
  const output = count(a['gen_ai.usage.output_tokens']);
  if (input !== undefined) call.inputTokens = input;
  if (output !== undefined) call.outputTokens = output;
  const finish = first(a['gen_ai.response.finish_reasons']);
  if (finish) call.finishReason = finish;
  if (m.error) call.error = { class: 'Error', message: first(a['error.type']) ?? 'the span ended with an error' };
  return call;
}

/** Calls to AI models: from the provider SDKs' wire, the ai SDK's telemetry, and gen_ai spans, in the order they started. */
export const ai: CorePanel<AiData> = {
  id: 'ai',
  title: 'AI',
  collect(s) {
    const recorded: [StoredAiCall, AiCallData['source']][] = (s.inside?.ai ?? []).map((c) => [c, c.url !== undefined ? 'wire' : 'telemetry']);
    for (const m of s.inside?.marks ?? []) {
      const call = spanCall(m);
      if (call) recorded.push([call, 'span']);
    }
    if (recorded.length === 0) return undefined;
    recorded.sort((a, b) => a[0].start - b[0].start);
    const calls = recorded.map(([c, source], i): AiCallData => ({
      ...c,
      n: i + 1,
      source,
      duration: duration(c.start, c.end),
      ...(c.firstChunk !== undefined ? { ttft: Math.round((c.firstChunk - c.start) * 1000) / 1000 } : {}),
    }));
    return {
      count: calls.length,
      errors: calls.filter((c) => c.error).length,
      time: Math.round(calls.reduce((t, c) => t + c.duration, 0) * 1000) / 1000,
      inputTokens: calls.reduce((t, c) => t + (c.inputTokens ?? 0), 0),
      outputTokens: calls.reduce((t, c) => t + (c.outputTokens ?? 0), 0),
      calls,
    };
  },
  badge: (data) => data.count,
};
