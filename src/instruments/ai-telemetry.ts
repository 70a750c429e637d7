import { callerFrame } from '../recording/caller.js';
import { aiCallEnded, aiCallStarted, cutContent, type AiCallEntry, type AiFacts } from '../recording/ai.js';
import { insideOf, requestOf, sinceStart } from '../recording/inside.js';

/** The parts of the ai SDK's (7) telemetry events read here: its `TelemetryIntegration`'s. */
interface CallStart {
  callId?: string;
  provider?: string;
  modelId?: string;
  instructions?: unknown;
  messages?: unknown;
  tools?: unknown;
  execute: () => Promise<unknown>;
}
interface CallEnd {
  callId?: string;
  provider?: string;
  modelId?: string;
  finishReason?: string;
  usage?: { inputTokens?: number; outputTokens?: number };
  content?: { type?: string; toolName?: string; input?: unknown; text?: string }[];
  performance?: { timeToFirstOutputMs?: number };
}

const open = new WeakMap<AiCallEntry, string | undefined>();

const json = (value: unknown): string => {
  try {
    return cutContent(JSON.stringify(value) ?? '');
  } catch {
    return '';
  }
};

function toolNames(tools: unknown): string[] | undefined {
  if (Array.isArray(tools)) return tools.map((t) => String((t as { name?: unknown })?.name ?? '?'));
  if (tools !== null && typeof tools === 'object') return Object.keys(tools);
  return undefined;
}

/** `openai.chat` → provider openai, operation chat. */
function providerOf(facts: AiFacts, provider: string | undefined): void {
  if (typeof provider !== 'string') return;
  const dot = provider.indexOf('.');
  facts.provider = dot < 0 ? provider : provider.slice(0, dot);
  if (dot >= 0) facts.operation = provider.slice(dot + 1);
}

/**
 * The ai SDK (7) tells what each model call did to the telemetry integrations registered
 * globally (`registerTelemetry`, the array below): the profiler is one of them. The call is
 * wrapped (`executeLanguageModelCall`: its start, caller and error, in the request's context), and
 * what the model answered (tokens, finish reason, tool calls, a stream's first output) comes on
 * `onLanguageModelCallEnd`. An app that gives a call integrations of its own replaces the global
 * ones for that call, as the SDK documents.
 */
export function recordAiSdk(): void {
  const global = globalThis as { AI_SDK_TELEMETRY_INTEGRATIONS?: object[] };
  const integrations = (global.AI_SDK_TELEMETRY_INTEGRATIONS ??= []);
  if (integrations.includes(integration)) return;
  integrations.push(integration);
}

const integration = {
  async executeLanguageModelCall(event: CallStart): Promise<unknown> {
    const ctx = requestOf();
    let entry: AiCallEntry | undefined;
    try {
      entry = ctx && aiCallStarted(ctx, 'ai', callerFrame());
      if (entry !== undefined) {
        const facts: AiFacts = { model: event.modelId };
        providerOf(facts, event.provider);
        const tools = toolNames(event.tools);
        if (tools !== undefined && tools.length > 0) facts.tools = tools;
        if (entry.content) facts.prompt = json({ instructions: event.instructions, messages: event.messages });
        entry.facts = facts;
        open.set(entry, event.callId);
      }
    } catch {
      entry = undefined;
    }
    if (entry === undefined) return event.execute();
    try {
      const result = await event.execute();
      const streamed = result !== null && typeof result === 'object' && 'stream' in result;
      entry.facts!.stream = streamed;
      // A stream ends when its last part has been read: onLanguageModelCallEnd says so.
      if (!streamed) entry.end = sinceStart(ctx!);
      return result;
    } catch (err) {
      aiCallEnded(ctx!, entry, err);
      open.delete(entry);
      throw err;
    }
  },
  onLanguageModelCallEnd(event: CallEnd): void {
    const ctx = requestOf();
    if (ctx === undefined) return;
    try {
      const calls = insideOf(ctx).ai;
      const entry = calls.findLast((c) => c.library === 'ai' && open.has(c) && open.get(c) === event.callId);
      if (entry === undefined) return;
      open.delete(entry);
      const facts = entry.facts!;
      if (typeof event.modelId === 'string') facts.model = event.modelId;
      if (typeof event.finishReason === 'string') facts.finishReason = event.finishReason;
      if (typeof event.usage?.inputTokens === 'number') facts.inputTokens = event.usage.inputTokens;
      if (typeof event.usage?.outputTokens === 'number') facts.outputTokens = event.usage.outputTokens;
      const toolCalls = (event.content ?? []).filter((part) => part?.type === 'tool-call');
      if (toolCalls.length > 0) facts.toolCalls = toolCalls.map((t) => ({ name: String(t.toolName), arguments: json(t.input) }));
      if (entry.content) facts.output = json(event.content);
      const first = event.performance?.timeToFirstOutputMs;
      if (facts.stream && typeof first === 'number') entry.firstChunk = entry.start + first;
      if (entry.end < 0) entry.end = sinceStart(ctx);
    } catch (err) {
      ctx.recorder.failed(err);
    }
  },
};
