import { cutContent as cut, type AiFacts, type WireCall } from '../recording/ai.js';
import type { CallerFrom } from '../recording/inside.js';
import type { CapturedAiCall, ErrorSummary } from '../recording/inside-capture.js';
import { redactText, redactUrl, redactValue } from './redact.js';
import { hideSecrets, type RequestSecrets } from './request-secrets.js';

/** A model call as stored: what it was and what it cost, its prompt and answer only with the aiContent option. */
export interface StoredAiCall extends Omit<AiFacts, 'tools'> {
  library: string;
  start: number;
  end: number;
  firstChunk?: number;
  caller?: string;
  callerFrom?: CallerFrom;
  /** Provider SDK calls: where they went and what the server answered. */
  url?: string;
  status?: number;
  tools?: string[];
  error?: ErrorSummary;
}


type Json = Record<string, any>;
const parse = (text: string | undefined): Json | undefined => {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === 'object' ? v : undefined;
  } catch {
    return undefined;
  }
};
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const argsText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v ?? {}));

/** The operation an endpoint is: `/v1/chat/completions` → chat, `/v1/responses` → responses, `/v1/messages` → messages. */
function operationOf(url: string): string {
  const path = url.replace(/^[a-z]+:\/\/[^/]+/i, '').split('?')[0];
  if (/\/chat\/completions$/.test(path)) return 'chat';
  return path.split('/').filter(Boolean).pop() ?? path;
}

/** A stream's events, from its text: each `data:` line's JSON, the `event:` before it kept as `type` when the data has none. */
function eventsOf(text: string): Json[] {
  const events: Json[] = [];
  let name: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('event:')) name = line.slice(6).trim();
    else if (line.startsWith('data:')) {
      const data = parse(line.slice(5).trim());
      if (data !== undefined) events.push(data.type === undefined && name !== undefined ? { ...data, type: name } : data);
    } else if (line === '') name = undefined;
  }
  return events;
}

interface Answer {
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  finishReason?: string;
  toolCalls: { name: string; arguments: string }[];
  text: string;
  error?: { message: string; code?: string };
}

/** An OpenAI chat completion, or its chunks folded into one. */
function chatAnswer(answer: Answer, message: Json): void {
  answer.model = str(message.model) ?? answer.model;
  const usage = message.usage;
  if (usage) {
    answer.inputTokens = num(usage.prompt_tokens) ?? answer.inputTokens;
    answer.outputTokens = num(usage.completion_tokens) ?? answer.outputTokens;
  }
  for (const choice of message.choices ?? []) {
    const part = choice.message ?? choice.delta ?? {};
    answer.finishReason = str(choice.finish_reason) ?? answer.finishReason;
    if (typeof part.content === 'string') answer.text += part.content;
    for (const call of part.tool_calls ?? []) {
      const i = num(call.index) ?? answer.toolCalls.length;
      const held = (answer.toolCalls[i] ??= { name: '', arguments: '' });
      held.name += call.function?.name ?? '';
      held.arguments += call.function?.arguments ?? '';
    }
  }
}

/** An OpenAI response (the Responses API). */
function responsesAnswer(answer: Answer, response: Json): void {
  answer.model = str(response.model) ?? answer.model;
  answer.inputTokens = num(response.usage?.input_tokens) ?? answer.inputTokens;
  answer.outputTokens = num(response.usage?.output_tokens) ?? answer.outputTokens;
  for (const item of response.output ?? []) {
    if (item.type === 'function_call') answer.toolCalls.push({ name: String(item.name), arguments: argsText(item.arguments) });
    for (const c of item.content ?? []) if (typeof c.text === 'string') answer.text += c.text;
  }
  answer.finishReason = answer.toolCalls.length > 0 ? 'tool_calls' : str(response.incomplete_details?.reason) ?? str(response.status) ?? answer.finishReason;
  if (response.error?.message) answer.error = { message: String(response.error.message), ...(typeof response.error.code === 'string' ? { code: response.error.code } : {}) };
}

/** An Anthropic message, or its stream's events folded into one. */
function messagesAnswer(answer: Answer, m: Json, blocks: Map<number, { name: string; arguments: string }>): void {
  const message = m.type === 'message_start' ? m.message : m;
  if (m.type === 'message_start' || m.type === 'message' || m.content !== undefined) {
    answer.model = str(message.model) ?? answer.model;
    answer.inputTokens = num(message.usage?.input_tokens) ?? answer.inputTokens;
    answer.outputTokens = num(message.usage?.output_tokens) ?? answer.outputTokens;
    answer.finishReason = str(message.stop_reason) ?? answer.finishReason;
    for (const block of message.content ?? []) {
      if (block.type === 'tool_use') answer.toolCalls.push({ name: String(block.name), arguments: argsText(block.input) });
      else if (typeof block.text === 'string') answer.text += block.text;
    }
  } else if (m.type === 'content_block_start' && m.content_block?.type === 'tool_use') {
    const call = { name: String(m.content_block.name), arguments: '' };
    blocks.set(num(m.index) ?? blocks.size, call);
    answer.toolCalls.push(call);
  } else if (m.type === 'content_block_delta') {
    if (m.delta?.type === 'input_json_delta') {
      const call = blocks.get(num(m.index) ?? -1);
      if (call) call.arguments += m.delta.partial_json ?? '';
    } else if (typeof m.delta?.text === 'string') answer.text += m.delta.text;
  } else if (m.type === 'message_delta') {
    answer.finishReason = str(m.delta?.stop_reason) ?? answer.finishReason;
    answer.outputTokens = num(m.usage?.output_tokens) ?? answer.outputTokens;
    answer.inputTokens = num(m.usage?.input_tokens) ?? answer.inputTokens;
  }
}

/** What the wire says: the request's model, stream flag and tools; the answer's tokens, finish, tool calls, error. */
export function wireFacts(library: string, wire: WireCall): AiFacts & { text: string; error?: Answer['error']; request?: Json } {
  const request = parse(wire.body);
  const operation = operationOf(wire.url);
  const facts: AiFacts & { text: string; error?: Answer['error']; request?: Json } = { provider: library, operation, text: '' };
  if (request) {
    facts.model = str(request.model);
    facts.stream = request.stream === true;
    const tools = (request.tools ?? []) as Json[];
    if (Array.isArray(tools) && tools.length > 0) facts.tools = tools.map((t) => String(t?.function?.name ?? t?.name ?? t?.type ?? '?'));
    facts.request = request;
  }
  const whole = wire.tail === undefined ? wire.answer : `${wire.answer}\n\n${wire.tail.slice(wire.tail.indexOf('\n') + 1)}`;
  const json = parse(wire.answer);
  const events = json === undefined ? eventsOf(whole) : [json];
  const answer: Answer = { toolCalls: [], text: '' };
  const blocks = new Map<number, { name: string; arguments: string }>();
  for (const e of events) {
    if (e.error != null && (e.type === 'error' || (wire.status ?? 0) >= 400 || e.object === undefined)) {
      const code = e.error?.code ?? e.error?.type;
      answer.error = { message: String(e.error?.message ?? e.error), ...(typeof code === 'string' ? { code } : {}) };
      continue;
    }
    if (operation === 'chat') chatAnswer(answer, e);
    else if (operation === 'responses') {
      if (e.type === 'response.failed' || e.type === 'response.completed' || e.type === 'response.incomplete') responsesAnswer(answer, e.response ?? {});
      else if (e.object === 'response') responsesAnswer(answer, e);
    } else messagesAnswer(answer, e, blocks);
  }
  if ((wire.status ?? 0) >= 400 && answer.error === undefined) answer.error = { message: `the provider answered ${wire.status}` };
  Object.assign(facts, {
    ...(answer.model !== undefined ? { model: answer.model } : {}),
    ...(answer.inputTokens !== undefined ? { inputTokens: answer.inputTokens } : {}),
    ...(answer.outputTokens !== undefined ? { outputTokens: answer.outputTokens } : {}),
    ...(answer.finishReason !== undefined ? { finishReason: answer.finishReason } : {}),
    ...(answer.toolCalls.length > 0 ? { toolCalls: answer.toolCalls } : {}),
    text: answer.text,
    ...(answer.error !== undefined ? { error: answer.error } : {}),
  });
  return facts;
}

/** JSON text with secret-named fields and the request's own secrets replaced; other text as any text is. */
function redactJson(text: string, keys: string[], secrets: RequestSecrets | undefined): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return redactText(text, keys);
  }
  return JSON.stringify(redactValue(secrets && secrets.size > 0 ? hideSecrets(value, secrets) : value, keys));
}

/**
 * A call as stored: the wire's JSON read into facts here, off the request's thread; tool
 * arguments redacted; the prompt (instructions, messages, input) and the answer kept only when
 * the call was recorded with the aiContent option, redacted and cut to 20 kB.
 */
export function storedAiCall(c: CapturedAiCall, keys: string[], secrets: RequestSecrets | undefined): StoredAiCall {
  const out: StoredAiCall = { library: c.library, start: c.start, end: c.end };
  let facts: AiFacts = c.facts ?? {};
  if (c.wire !== undefined) {
    const { text, error, request, ...read } = wireFacts(c.library, c.wire);
    facts = read;
    out.url = redactUrl(c.wire.url, keys);
    if (c.wire.status !== undefined) out.status = c.wire.status;
    if (error !== undefined && c.error === undefined) out.error = { class: c.wire.status !== undefined && c.wire.status >= 400 ? `HTTP ${c.wire.status}` : 'Error', message: redactText(error.message, keys), ...(error.code ? { code: error.code } : {}) };
    if (c.content) {
      if (request) {
        const { messages, input, system, instructions } = request;
        facts.prompt = JSON.stringify({ system, instructions, messages, input });
      }
      if (text !== '') facts.output = JSON.stringify(text);
    }
  }
  const { prompt, output, toolCalls, ...said } = facts;
  Object.assign(out, said);
  if (c.firstChunk !== undefined && facts.stream) out.firstChunk = c.firstChunk;
  if (c.caller !== undefined) out.caller = c.caller;
  if (c.callerFrom !== undefined) out.callerFrom = c.callerFrom;
  if (c.error !== undefined) out.error = { ...c.error, message: redactText(c.error.message, keys) };
  if (toolCalls) out.toolCalls = toolCalls.map((t) => ({ name: t.name, arguments: cut(redactJson(t.arguments || '{}', keys, secrets)) }));
  if (c.content && prompt !== undefined) out.prompt = cut(redactJson(prompt, keys, secrets));
  if (c.content && output !== undefined) out.output = cut(redactJson(output, keys, secrets));
  return out;
}
