import type { WorkContext } from './context.js';
import { insideOf, MAX_QUERIES, sinceStart } from './inside.js';

/** What a library said of a model call itself (the ai SDK's telemetry), as the writer reads a wire call's JSON. */
export interface AiFacts {
  provider?: string;
  model?: string;
  operation?: string;
  stream?: boolean;
  inputTokens?: number;
  outputTokens?: number;
  finishReason?: string;
  tools?: string[];
  toolCalls?: { name: string; arguments: string }[];
  /** Kept only with the `aiContent` option: the instructions and messages, and the answer, as JSON text. */
  prompt?: string;
  output?: string;
}

/** One call to a model, from the call to the end of its answer. Times are ms since arrival. */
export interface AiCallEntry {
  /** The library the app called: `openai`, `anthropic` (@anthropic-ai/sdk), `ai` (the AI SDK). */
  library: string;
  start: number;
  end: number;
  /** A stream's first chunk. */
  firstChunk: number | undefined;
  caller: string | undefined;
  /** Where the caller came from when the call's own stack held no line of the app's (see answeredFrom). */
  callerFrom?: import('./inside.js').CallerFrom;
  error: unknown;
  /** A call made through a provider's SDK: what went over the wire, read by the writer. */
  wire?: WireCall;
  /** A call a library described itself. */
  facts?: AiFacts;
  /** The prompt and answer are kept (the `aiContent` option). */
  content: boolean;
}

export interface WireCall {
  method: string;
  url: string;
  status?: number;
  /** The request's JSON text, within the limit. */
  body?: string;
  /** The answer's text (JSON, or a stream's events) within the limit, and its last part when longer: a stream says its usage at its end. */
  answer: string;
  tail?: string;
  size: number;
}

/** A prompt, an answer or a tool's arguments is kept to this length (with the aiContent option for the first two). */
const CONTENT_LIMIT = 20 * 1024;
export const cutContent = (text: string): string => (text.length > CONTENT_LIMIT ? `${text.slice(0, CONTENT_LIMIT)}…` : text);

/** The answer's text is kept up to this, and its last TAIL characters. */
export const ANSWER_HEAD = 64 * 1024;
const TAIL = 16 * 1024;

export function aiCallStarted(ctx: WorkContext, library: string, caller: string | undefined, wire?: WireCall): AiCallEntry | undefined {
  const calls = insideOf(ctx).ai;
  if (calls.length >= MAX_QUERIES) return undefined;
  const entry: AiCallEntry = { library, start: sinceStart(ctx), end: -1, firstChunk: undefined, caller, error: undefined, content: ctx.recorder.aiContent };
  if (wire !== undefined) entry.wire = wire;
  calls.push(entry);
  return entry;
}

export function aiCallEnded(ctx: WorkContext, entry: AiCallEntry, error?: unknown): void {
  if (entry.end >= 0) return;
  entry.end = sinceStart(ctx);
  if (error !== undefined) entry.error = error;
}

/**
 * Reads a copy of the answer as the app reads its own (a Response's clone: the same bytes, teed),
 * off the app's path: its text, the time of its first chunk, its end. Whatever happens to the
 * copy (the app stops reading, the connection drops) stays here.
 */
export async function readAnswer(ctx: WorkContext, entry: AiCallEntry, copy: Response): Promise<void> {
  const wire = entry.wire!;
  const decoder = new TextDecoder();
  try {
    const reader = copy.body?.getReader();
    while (reader !== undefined) {
      const { done, value } = await reader.read();
      if (done) break;
      if (entry.firstChunk === undefined) entry.firstChunk = sinceStart(ctx);
      wire.size += value.byteLength;
      const text = decoder.decode(value, { stream: true });
      if (wire.answer.length < ANSWER_HEAD) wire.answer += text;
      else wire.tail = ((wire.tail ?? '') + text).slice(-TAIL);
    }
    aiCallEnded(ctx, entry);
  } catch (err) {
    aiCallEnded(ctx, entry, err);
  }
}
