import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import express from 'express';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { FIRST_CHUNK_MS, startProvider, TOOL_ARGUMENTS, USAGE, type Provider } from './fixtures/ai-provider.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

/** What each route asks: a prompt with a word that must never be stored unless asked for, and a secret. */
const PROMPT = 'Say hello. The code word is marmalade-7; my password: hunter2';
const WEATHER = { type: 'object' as const, properties: { city: { type: 'string' as const }, api_key: { type: 'string' as const } }, required: ['city'] };

type Case = 'plain' | 'stream' | 'tool' | 'error';
type Call = (provider: string, kind: Case) => Promise<unknown>;

/** The three SDKs as an app uses them, each pointed at the loopback provider by its base URL. */
function sdks(provider: string): Record<string, Call> {
  // A key in the query, as Azure's deployments take it: the stored URL must not keep it.
  const openai = new OpenAI({ baseURL: `${provider}/v1`, apiKey: 'sk-test-openai', maxRetries: 0, defaultQuery: { 'api-version': '2025-01-01', 'api-key': 'az-query-secret-77' } });
  const anthropic = new Anthropic({ baseURL: provider, apiKey: 'sk-ant-test', maxRetries: 0 });
  const aiOpenai = createOpenAI({ baseURL: `${provider}/v1`, apiKey: 'sk-test-ai' });
  const aiAnthropic = createAnthropic({ baseURL: `${provider}/v1`, apiKey: 'sk-ant-test' });
  const messages = [{ role: 'user' as const, content: PROMPT }];
  return {
    async openai(_, kind) {
      const model = kind === 'error' ? 'no-such-model' : 'gpt-4o-mini';
      if (kind === 'stream') {
        let text = '';
        const stream = await openai.chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } });
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        return text;
      }
      const tools = kind === 'tool' ? [{ type: 'function' as const, function: { name: 'get_weather', parameters: WEATHER } }] : undefined;
      const answer = await openai.chat.completions.create({ model, messages, ...(tools ? { tools } : {}) });
      return answer.choices[0].message.content ?? answer.choices[0].message.tool_calls?.length;
    },
    async 'openai-responses'(_, kind) {
      const model = kind === 'error' ? 'no-such-model' : 'gpt-4.1-mini';
      if (kind === 'stream') {
        const stream = await openai.responses.create({ model, input: PROMPT, stream: true });
        let text = '';
        for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
        return text;
      }
      const tools = kind === 'tool' ? [{ type: 'function' as const, name: 'get_weather', parameters: WEATHER, strict: false }] : undefined;
      return (await openai.responses.create({ model, input: PROMPT, ...(tools ? { tools } : {}) })).output_text;
    },
    async anthropic(_, kind) {
      const model = kind === 'error' ? 'no-such-model' : 'claude-fixture-1';
      if (kind === 'stream') return (await anthropic.messages.stream({ model, max_tokens: 100, messages }).finalMessage()).content.length;
      const tools = kind === 'tool' ? [{ name: 'get_weather', input_schema: WEATHER }] : undefined;
      return (await anthropic.messages.create({ model, max_tokens: 100, messages, ...(tools ? { tools } : {}) })).content.length;
    },
    async 'ai-sdk'(_, kind) {
      const model = aiOpenai.chat(kind === 'error' ? 'no-such-model' : 'gpt-4o-mini');
      const tools = kind === 'tool' ? { get_weather: tool({ description: 'The weather in a city', inputSchema: jsonSchema(WEATHER) }) } : undefined;
      if (kind === 'stream') {
        const result = streamText({ model, prompt: PROMPT });
        let text = '';
        for await (const part of result.textStream) text += part;
        return text;
      }
      return (await generateText({ model, prompt: PROMPT, maxRetries: 0, ...(tools ? { tools } : {}) })).text;
    },
    async 'ai-sdk-anthropic'(_, kind) {
      const model = aiAnthropic(kind === 'error' ? 'no-such-model' : 'claude-fixture-1');
      return (await generateText({ model, prompt: PROMPT, maxRetries: 0 })).text;
    },
  };
}

function appWith(profiler: ReturnType<typeof webProfiler>, provider: string) {
  const calls = sdks(provider);
  const app = express();
  app.use(profiler);
  app.get('/ask/:sdk/:kind', async (req, res) => {
    try {
      const answer = await calls[req.params.sdk](provider, req.params.kind as Case);
      // What the model said is not sent on: the profile's response panel would hold it.
      res.json({ ok: true, length: String(answer ?? '').length });
    } catch (err) {
      res.status(502).json({ ok: false, error: (err as Error).constructor.name });
    }
  });
  // A route that hands the caller's own credential to the model (an agent acting for the user).
  const relay = new OpenAI({ baseURL: `${provider}/v1`, apiKey: 'sk-test-openai', maxRetries: 0 });
  app.get('/relay', async (req, res) => {
    const token = String(req.get('authorization')).replace(/^Bearer /, '');
    const answer = await relay.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Fetch my orders with the token ${token}` }] });
    res.json({ ok: answer.choices.length > 0 });
  });
  app.use(profiler.errorHandler);
  return app;
}

describe('AI calls', () => {
  let provider: Provider;
  let server: Running;
  let database: string;
  let profiler: ReturnType<typeof webProfiler>;
  const tokens: Record<string, string> = {};

  const ask = async (sdk: string, kind: Case) => {
    const res = await fetch(`${server.url}/ask/${sdk}/${kind}`);
    const body = await res.json();
    expect(res.status, `${sdk} ${kind}: ${JSON.stringify(body)}`).toBe(kind === 'error' ? 502 : 200);
    return (tokens[`${sdk} ${kind}`] = res.headers.get('x-debug-token')!);
  };
  const panelOf = async (token: string) => {
    profiler.flush();
    const profile = await (await fetch(`${server.url}/_profiler/${token}`, { headers: { accept: 'application/json' } })).json();
    return profile.collectors.ai;
  };

  beforeAll(async () => {
    provider = await startProvider();
    database = tempDb();
    profiler = webProfiler({ database, onError: () => {} });
    server = await listen(appWith(profiler, provider.url));
  });
  afterAll(async () => {
    await server?.close();
    profiler?.close();
    await provider?.close();
  });

  const expected = {
    openai: { provider: 'openai', operation: 'chat', model: 'gpt-4o-mini', stop: 'stop', tools: 'tool_calls' },
    'openai-responses': { provider: 'openai', operation: 'responses', model: 'gpt-4.1-mini', stop: 'completed', tools: 'tool_calls' },
    anthropic: { provider: 'anthropic', operation: 'messages', model: 'claude-fixture-1', stop: 'end_turn', tools: 'tool_use' },
    'ai-sdk': { provider: 'openai', operation: 'chat', model: 'gpt-4o-mini', stop: 'stop', tools: 'tool-calls' },
  };

  describe.each(Object.entries(expected))('%s', (sdk, want) => {
    it('a plain call: model, tokens, finish reason, time and the app\'s line', async () => {
      const panel = await panelOf(await ask(sdk, 'plain'));
      expect(panel.count).toBe(1);
      expect(panel.calls[0]).toMatchObject({ provider: want.provider, operation: want.operation, model: want.model, inputTokens: USAGE.input, outputTokens: USAGE.output, finishReason: want.stop });
      expect(panel.calls[0].stream).toBeFalsy();
      expect(panel.calls[0].error).toBeUndefined();
      expect(panel.calls[0].caller).toMatch(/ai\.test\.ts:\d+$/);
      expect(panel.calls[0].duration).toBeGreaterThan(0);
      expect(panel).toMatchObject({ inputTokens: USAGE.input, outputTokens: USAGE.output, errors: 0 });
    });

    it('a stream: its tokens and its time to the first chunk', async () => {
      const panel = await panelOf(await ask(sdk, 'stream'));
      const call = panel.calls[0];
      expect(call).toMatchObject({ model: want.model, stream: true, outputTokens: USAGE.output, finishReason: want.stop });
      // The provider waits FIRST_CHUNK_MS before the first chunk: the stream took longer to start than to go on.
      expect(call.ttft).toBeGreaterThanOrEqual(FIRST_CHUNK_MS - 5);
      expect(call.duration).toBeGreaterThanOrEqual(call.ttft);
    });

    it('a tool call: the tool and its arguments, a secret among them redacted', async () => {
      const panel = await panelOf(await ask(sdk, 'tool'));
      const call = panel.calls[0];
      expect(call.finishReason).toBe(want.tools);
      expect(call.tools).toEqual(['get_weather']);
      expect(call.toolCalls).toHaveLength(1);
      expect(call.toolCalls[0].name).toBe('get_weather');
      expect(JSON.parse(call.toolCalls[0].arguments)).toEqual({ city: TOOL_ARGUMENTS.city, api_key: '[redacted]' });
    });

    it('an error: what the provider said, on the call that failed', async () => {
      const panel = await panelOf(await ask(sdk, 'error'));
      expect(panel.errors).toBe(1);
      expect(panel.calls).toHaveLength(1);
      expect(panel.calls[0].model).toBe('no-such-model');
      expect(panel.calls[0].error.message).toContain('does not exist');
    });
  });

  it('the ai SDK with another provider: the same facts', async () => {
    const panel = await panelOf(await ask('ai-sdk-anthropic', 'plain'));
    expect(panel.calls[0]).toMatchObject({ library: 'ai', provider: 'anthropic', operation: 'messages', model: 'claude-fixture-1', inputTokens: USAGE.input, outputTokens: USAGE.output, finishReason: 'stop' });
  });

  it('stores nothing of a prompt or an answer by default, nor a tool\'s secret', async () => {
    profiler.flush();
    expect(Object.keys(tokens).length).toBeGreaterThanOrEqual(17);
    const stored = JSON.stringify(readRows(database));
    expect(stored).toContain('gpt-4o-mini');
    expect(stored).not.toContain('marmalade');
    expect(stored).not.toContain('hunter2');
    expect(stored).not.toContain('from the fixture');
    expect(stored).not.toContain(TOOL_ARGUMENTS.api_key);
    expect(stored).not.toContain('az-query-secret-77');
    expect(stored).toContain('api-version=2025-01-01');
    // The provider was asked everything: nothing left the machine but to it.
    expect(provider.asked.some((a) => JSON.stringify(a).includes('marmalade'))).toBe(true);
  });

  it('shows the calls on the panel, the toolbar and the timeline', async () => {
    const token = tokens['anthropic tool'];
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=ai`)).text();
    expect(page).toContain('<h2>AI</h2>');
    expect(page).toContain('claude-fixture-1');
    expect(page).toContain('get_weather');
    expect(page).toContain('Prompts and answers are not kept');
    const toolbar = await (await fetch(`${server.url}/_wdt/${token}`)).text();
    expect(toolbar).toContain(`AI</span> <span class="wp-wdt-mono">1 · ${USAGE.input + USAGE.output} tokens`);
    const timeline = (await (await fetch(`${server.url}/_profiler/${token}`, { headers: { accept: 'application/json' } })).json()).collectors.performance.timeline;
    expect(timeline).toContainEqual(expect.objectContaining({ kind: 'ai', name: 'anthropic claude-fixture-1 messages' }));
  });
});

describe('AI calls with the aiContent option', () => {
  let provider: Provider;
  let server: Running;
  let database: string;
  let profiler: ReturnType<typeof webProfiler>;

  beforeAll(async () => {
    provider = await startProvider();
    database = tempDb();
    profiler = webProfiler({ database, aiContent: true, onError: () => {} });
    server = await listen(appWith(profiler, provider.url));
  });
  afterAll(async () => {
    await server?.close();
    profiler?.close();
    await provider?.close();
  });

  it.each(['openai', 'anthropic', 'ai-sdk'])('%s: keeps the prompt and the answer, redacted', async (sdk) => {
    const res = await fetch(`${server.url}/ask/${sdk}/stream`);
    expect(res.status).toBe(200);
    await res.text();
    profiler.flush();
    const profile = await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: { accept: 'application/json' } })).json();
    const call = profile.collectors.ai.calls[0];
    expect(call.prompt).toContain('marmalade-7');
    expect(call.prompt).not.toContain('hunter2');
    expect(call.output).toContain('Hello from the fixture');
    expect(JSON.stringify(readRows(database))).not.toContain('hunter2');
  });

  it('a route that only calls a model: the caller\'s bearer token, given in the prompt, is nowhere in the store', async () => {
    const secret = 'relay-user-token-5f3a9c1e';
    const res = await fetch(`${server.url}/relay`, { headers: { authorization: `Bearer ${secret}` } });
    expect(res.status).toBe(200);
    profiler.flush();
    const profile = await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: { accept: 'application/json' } })).json();
    expect(profile.collectors.ai.calls[0].prompt).toContain('[redacted]');
    expect(provider.asked.some((a) => JSON.stringify(a).includes(secret))).toBe(true);
    expect(JSON.stringify(readRows(database))).not.toContain(secret);
  });
});

describe('gen_ai spans through the OpenTelemetry bridge', () => {
  it('lists a model call another instrumentation traced, with its tokens and finish reason, beside the ones recorded natively', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    // The app's own provider (not registered globally: the other tests' process stays untraced).
    const tracer = new BasicTracerProvider({ spanProcessors: [profiler.spanProcessor()] }).getTracer('@traceloop/instrumentation-bedrock');
    const app = express();
    app.use(profiler);
    app.get('/summarise', async (_req, res) => {
      const span = tracer.startSpan('chat amazon.nova-pro', { attributes: {
        'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'aws.bedrock', 'gen_ai.request.model': 'amazon.nova-pro-v1:0',
        'gen_ai.usage.input_tokens': 310, 'gen_ai.usage.output_tokens': 42, 'gen_ai.response.finish_reasons': ['stop'],
      } });
      await new Promise((resolve) => setTimeout(resolve, 20));
      span.end();
      res.json({ ok: true });
    });
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/summarise`);
      await res.json();
      profiler.flush();
      // No HTTP instrumentation started a trace for the request: it joins its span's, and is found by it.
      const { trace } = await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: { accept: 'application/json' } })).json();
      expect(trace).toMatch(/^[0-9a-f]{32}$/);
      const found = await (await fetch(`${server.url}/_profiler/search?trace_id=${trace}`, { headers: { accept: 'application/json' } })).json();
      expect(found.profiles.map((p: { token: string }) => p.token)).toEqual([res.headers.get('x-debug-token')]);
      const panel = (await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: { accept: 'application/json' } })).json()).collectors.ai;
      expect(panel.calls).toEqual([expect.objectContaining({
        source: 'span', library: '@traceloop/instrumentation-bedrock', provider: 'aws.bedrock', model: 'amazon.nova-pro-v1:0', operation: 'chat',
        inputTokens: 310, outputTokens: 42, finishReason: 'stop',
      })]);
      expect(panel.calls[0].duration).toBeGreaterThanOrEqual(19);
    } finally {
      await server.close();
      profiler.close();
    }
  });
});
