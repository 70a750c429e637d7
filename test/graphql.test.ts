import { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import express from 'express';
import * as graphql17 from 'graphql17';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const typeDefs = `
  type User { id: ID!, email: String! }
  type Query { user(id: ID!): User, broken: String }
  type Mutation { signUp(email: String!, password: String!): User }
`;
const users: Record<string, { id: string; email: string }> = { 7: { id: '7', email: 'ada@example.test' } };
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const resolvers = {
  Query: {
    user: async (_: unknown, { id }: { id: string }) => {
      await wait(15);
      return users[id] ?? null;
    },
    broken: () => {
      throw new Error('the ledger is gone');
    },
  },
  Mutation: {
    signUp: (_: unknown, { email }: { email: string }) => ({ id: '8', email }),
  },
};

const ASKED = {
  named: { query: 'query GetUser($id: ID!) { user(id: $id) { id email } }', variables: { id: '7' } },
  mutation: { query: 'mutation SignUp($email: String!, $password: String!) { signUp(email: $email, password: $password) { id } }', operationName: 'SignUp', variables: { email: 'grace@example.test', password: 'hunter2' } },
  broken: { query: '# a resolver that throws\nquery Broken { broken }' },
  // Variables named nothing like a secret, fed to an argument that is one.
  fed: { query: 'mutation Join($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', variables: { e: 'ada@example.test', p: 'fed-secret-31337' } },
};

/** The same question over GET (graphql-over-HTTP): the variables' JSON in the query string, with a password the document never uses. */
const GET_QUERY = `?query=${encodeURIComponent('query GetUser($id: ID!) { user(id: $id) { id } }')}&variables=${encodeURIComponent(JSON.stringify({ id: '7', password: 'get-secret-4242' }))}`;

/** graphql 16 under Apollo Server 5, and graphql 17 called by a handler of the app's: the same questions, the same answers. */
const servers = [
  {
    name: 'Apollo Server 5 (graphql 16)',
    mount: async (app: express.Express) => {
      const apollo = new ApolloServer({ typeDefs, resolvers });
      await apollo.start();
      app.use('/graphql', express.json(), expressMiddleware(apollo));
      return () => apollo.stop();
    },
    timesResolvers: false,
  },
  {
    name: 'graphql 17',
    mount: async (app: express.Express) => {
      const schema = graphql17.buildSchema(typeDefs);
      for (const [type, fields] of Object.entries(resolvers)) {
        const own = (schema.getType(type) as graphql17.GraphQLObjectType).getFields();
        for (const [field, resolve] of Object.entries(fields)) own[field].resolve = resolve as graphql17.GraphQLFieldResolver<unknown, unknown>;
      }
      app.post('/graphql', express.json(), async (req, res) => {
        const { query, variables, operationName } = req.body;
        res.json(await graphql17.graphql({ schema, source: query, variableValues: variables, operationName }));
      });
      app.get('/graphql', async (req, res) => {
        res.json(await graphql17.graphql({ schema, source: String(req.query.query), variableValues: JSON.parse(String(req.query.variables)) }));
      });
      return async () => {};
    },
    timesResolvers: true,
  },
];

describe.each(servers)('GraphQL: $name', ({ mount, timesResolvers }) => {
  let server: Running;
  let database: string;
  let profiler: ReturnType<typeof webProfiler>;
  let stop: () => Promise<void>;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    database = tempDb();
    profiler = webProfiler({ database, onError: () => {} });
    const app = express();
    app.use(profiler);
    stop = await mount(app);
    app.use(profiler.errorHandler);
    server = await listen(app);
    for (const [name, body] of Object.entries(ASKED)) {
      const res = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status, name).toBe(200);
      await res.json();
      tokens[name] = res.headers.get('x-debug-token')!;
    }
    // Apollo answers a GET that says it is no cross-site form (its CSRF prevention).
    const got = await fetch(`${server.url}/graphql${GET_QUERY}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual({ data: { user: { id: '7' } } });
    tokens.get = got.headers.get('x-debug-token')!;
    profiler.flush();
  });
  afterAll(async () => {
    await stop?.();
    await server?.close();
    profiler?.close();
  });

  const profileOf = async (token: string) => (await fetch(`${server.url}/_profiler/${token}`, { headers: { accept: 'application/json' } })).json();

  it('names each operation in the list, the live list and search', async () => {
    const named = await profileOf(tokens.named);
    expect(named.label).toBe('query GetUser');
    expect(named.collectors.graphql.operations).toEqual([expect.objectContaining({ type: 'query', name: 'GetUser', variables: { id: '7' }, errors: [] })]);
    expect((await profileOf(tokens.mutation)).label).toBe('mutation SignUp');
    const list = await (await fetch(`${server.url}/_profiler/`)).text();
    expect(list).toContain('<span class="op-label mono">query GetUser</span>');
    expect(list).toContain('<span class="op-label mono">mutation SignUp</span>');
    const found = await (await fetch(`${server.url}/_profiler/search?operation=GetUser&type=`, { headers: { accept: 'application/json' } })).json();
    // Newest first: the same query over GET (see below), then the named one.
    expect(found.profiles.map((p: { token: string }) => p.token)).toEqual([tokens.get, tokens.named]);
  });

  it('keeps a mutation\'s variables, the password among them redacted', async () => {
    const op = (await profileOf(tokens.mutation)).collectors.graphql.operations[0];
    expect(op).toMatchObject({ type: 'mutation', name: 'SignUp', variables: { email: 'grace@example.test', password: '[redacted]' } });
    expect(JSON.stringify(readRows(database))).not.toContain('hunter2');
  });

  it('hides a variable by the argument it feeds, whatever its name', async () => {
    const op = (await profileOf(tokens.fed)).collectors.graphql.operations[0];
    expect(op).toMatchObject({ type: 'mutation', name: 'Join', variables: { e: 'ada@example.test', p: '[redacted]' } });
    expect(JSON.stringify(readRows(database))).not.toContain('fed-secret-31337');
  });

  it('over GET, the variables in the stored URL are redacted as on the panel: list, search, cURL and the store', async () => {
    const profile = await profileOf(tokens.get);
    expect(profile.collectors.graphql.operations[0]).toMatchObject({ name: 'GetUser', variables: expect.objectContaining({ id: '7', password: '[redacted]' }) });
    expect(new URL(profile.url).searchParams.get('variables')).toBe(JSON.stringify({ id: '7', password: '[redacted]' }));
    const pages = await Promise.all([`/_profiler/`, `/_profiler/search?type=&limit=50`, `/_profiler/${tokens.get}/curl`].map(async (p) => (await fetch(server.url + p)).text()));
    for (const page of pages) expect(page).not.toContain('get-secret-4242');
    expect(pages[0]).toContain('GetUser');
    expect(pages[2]).toMatch(/^curl /);
    expect(JSON.stringify(readRows(database))).not.toContain('get-secret-4242');
  });

  it('flags a request whose resolver threw as failed, though it answered 200, and opens on its errors', async () => {
    const broken = await profileOf(tokens.broken);
    expect(broken.status).toBe(200);
    expect(broken.failed & 4).toBe(4);
    expect(broken.label).toBe('query Broken');
    expect(broken.collectors.graphql.operations[0].errors).toEqual([expect.objectContaining({ message: 'the ledger is gone', path: 'broken' })]);
    expect(broken.collectors.graphql.errors).toBe(1);
    const page = await (await fetch(`${server.url}/_profiler/${tokens.broken}`)).text();
    expect(page).toContain('<h2>GraphQL</h2>');
    expect(page).toContain('the ledger is gone');
    const list = await (await fetch(`${server.url}/_profiler/`)).text();
    expect(list).toMatch(new RegExp(`<tr data-token="${tokens.broken}" class="failed-row">`));
    expect(list).toContain('title="Failed: GraphQL errors"');
    expect(list).not.toMatch(new RegExp(`<tr data-token="${tokens.named}" class="failed-row">`));
  });

  it(timesResolvers ? 'times the app\'s resolvers from graphql\'s own channels' : 'says how to time resolvers where graphql does not publish them', async () => {
    const data = (await profileOf(tokens.named)).collectors.graphql;
    if (!timesResolvers) {
      expect(data.resolvers).toBeUndefined();
      return;
    }
    expect(data.resolvers).toEqual([expect.objectContaining({ path: 'user', field: 'Query.user' })]);
    expect(data.resolvers[0].duration).toBeGreaterThanOrEqual(14);
    const timeline = (await profileOf(tokens.named)).collectors.performance.timeline;
    expect(timeline.some((t: { kind: string; name: string }) => t.kind === 'span' && t.name === 'Query.user')).toBe(true);
    const broken = (await profileOf(tokens.broken)).collectors.graphql.resolvers;
    expect(broken).toEqual([expect.objectContaining({ path: 'broken', error: true })]);
  });
});
