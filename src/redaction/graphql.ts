import type { BodyData } from './body.js';

/** One GraphQL operation a request carried, read from its bodies as stored (redacted). */
export interface GraphqlOperation {
  type: 'query' | 'mutation' | 'subscription';
  /** Its name; undefined for an anonymous operation. */
  name?: string;
  /** The document as sent; undefined for a persisted query sent by its hash alone. */
  document?: string;
  variables?: unknown;
  /** A persisted query (APQ): its hash, when the client sent one. */
  persisted?: string;
  /** What the response said went wrong, in order: undefined when the response could not be read (cut, not JSON). */
  errors?: GraphqlError[];
}

export interface GraphqlError {
  message: string;
  /** The field path that failed (`user.posts.0.title`), when the error is a field's. */
  path?: string;
  code?: string;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The operations of a GraphQL request, whatever serves it (Apollo Server, GraphQL Yoga, graphql-http,
 * express-graphql, mercurius…): the body (or the query string of a GET) says what was asked, the
 * response's JSON what failed. Batched requests (an array) give one each. Undefined for any other
 * request: a body with a `query` string that does not read as a GraphQL document is not one.
 */
export function graphqlOperations(body: BodyData | undefined, query: unknown, response: BodyData | undefined): GraphqlOperation[] | undefined {
  const asked = askedOf(body, query);
  if (asked === undefined) return undefined;
  const answered = response?.json;
  return asked.map((request, i) => {
    const result = Array.isArray(answered) ? answered[i] : i === 0 ? answered : undefined;
    const op = operationOf(request);
    if (isObject(result) && (Array.isArray(result.errors) || 'data' in result)) op.errors = Array.isArray(result.errors) ? result.errors.map(errorOf) : [];
    return op;
  });
}

function askedOf(body: BodyData | undefined, query: unknown): Json[] | undefined {
  const json = body?.json;
  const requests = Array.isArray(json) ? json : isObject(json) ? [json] : isObject(query) && typeof query.query === 'string' ? [query] : [];
  const asked = requests.filter((r): r is Json => isObject(r) && (isDocument(r.query) || (r.query === undefined && persistedHash(r) !== undefined)));
  return asked.length > 0 && asked.length === requests.length ? asked : undefined;
}

/** A GraphQL document starts with an operation, a fragment, or the `{` of the query shorthand (after comments). */
const isDocument = (text: unknown): text is string => typeof text === 'string' && /^(?:\s|#[^\n]*\n)*(?:query|mutation|subscription|fragment|\{)/.test(text);

function persistedHash(request: Json): string | undefined {
  const extensions = typeof request.extensions === 'string' ? safeJson(request.extensions) : request.extensions;
  const hash = isObject(extensions) && isObject(extensions.persistedQuery) ? extensions.persistedQuery.sha256Hash : undefined;
  return typeof hash === 'string' ? hash : undefined;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const IS_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
const OPERATION = /\b(query|mutation|subscription)\b\s*([_A-Za-z][_0-9A-Za-z]*)?/g;

function operationOf(request: Json): GraphqlOperation {
  const document = typeof request.query === 'string' ? request.query : undefined;
  // A name is only ever matched as a name: what the client sends is not made a pattern.
  const named = typeof request.operationName === 'string' && IS_NAME.test(request.operationName) ? request.operationName : undefined;
  const text = document?.replace(/#[^\n]*/g, '');
  let type: GraphqlOperation['type'] = 'query';
  let name = named;
  if (text !== undefined && !text.trimStart().startsWith('{')) {
    // The operation asked for by name, else the document's first.
    for (const m of text.matchAll(OPERATION)) {
      if (named !== undefined && m[2] !== named) continue;
      type = m[1] as GraphqlOperation['type'];
      name ??= m[2];
      break;
    }
  }
  const variables = typeof request.variables === 'string' ? safeJson(request.variables) : request.variables;
  const op: GraphqlOperation = { type };
  if (name !== undefined) op.name = name;
  if (document !== undefined) op.document = document;
  if (variables !== undefined && variables !== null) op.variables = variables;
  const hash = persistedHash(request);
  if (hash !== undefined) op.persisted = hash;
  return op;
}

function errorOf(error: unknown): GraphqlError {
  const e = isObject(error) ? error : { message: String(error) };
  const out: GraphqlError = { message: typeof e.message === 'string' ? e.message : JSON.stringify(e.message) ?? '' };
  if (Array.isArray(e.path) && e.path.length > 0) out.path = e.path.join('.');
  const code = isObject(e.extensions) ? e.extensions.code : undefined;
  if (typeof code === 'string') out.code = code;
  return out;
}

/** What the list shows of a GraphQL request beside its URL: `query GetUser`, `mutation SignUp +2` for a batch. */
export function graphqlLabel(ops: GraphqlOperation[]): string {
  const first = ops[0];
  return `${first.type} ${first.name ?? '(anonymous)'}${ops.length > 1 ? ` +${ops.length - 1}` : ''}`;
}
