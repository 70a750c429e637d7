import { createRequire } from 'node:module';
import { contextOf, currentContext, type LogLevel } from '../recording/context.js';
import { addLine } from '../recording/logger.js';
import { span, startSpan } from '../recording/span.js';

/**
 * NestJS on Express, with nothing but `app.use(webProfiler())` in main.ts. Nest answers its
 * exceptions in its own filters (ExceptionsHandler), which Express never sees; logs through its
 * Logger, which writes to stdout itself; and registers each route as an anonymous proxy. Its
 * classes are found in the require cache (Nest is CommonJS) when the profiler starts, which is
 * after NestFactory.create() and before app.listen() registers the routes; only prototypes are
 * wrapped, and every wrapper passes its call through unchanged.
 */
const requireCache = createRequire(__filename).cache;
const FILES: [RegExp, (exports: Record<string, unknown>) => void][] = [
  [/[\\/]@nestjs[\\/]core[\\/]exceptions[\\/]exceptions-handler\.js$/, (m) => hookExceptions(m.ExceptionsHandler)],
  [/[\\/]@nestjs[\\/]core[\\/]router[\\/]router-explorer\.js$/, (m) => hookRouteNames(m.RouterExplorer)],
  [/[\\/]@nestjs[\\/]common[\\/]services[\\/]logger\.service\.js$/, (m) => hookLogger(m.Logger)],
  [/[\\/]@nestjs[\\/]core[\\/]guards[\\/]guards-consumer\.js$/, (m) => hookGuards(m.GuardsConsumer)],
  [/[\\/]@nestjs[\\/]core[\\/]pipes[\\/]pipes-consumer\.js$/, (m) => hookPipes(m.PipesConsumer)],
  [/[\\/]@nestjs[\\/]core[\\/]interceptors[\\/]interceptors-consumer\.js$/, (m) => hookInterceptors(m.InterceptorsConsumer)],
];
const hooked = new WeakSet<object>();

type Fn = (this: unknown, ...args: unknown[]) => unknown;
type Class = { prototype: Record<string, unknown> } & Record<string, unknown>;

/** Wraps `owner[name]` once: `wrap` gets the original and returns its replacement. */
function wrapOnce(owner: Record<string, unknown> | undefined, name: string, wrap: (original: Fn) => Fn): void {
  const original = owner?.[name];
  if (typeof original !== 'function' || hooked.has(original)) return;
  const replacement = wrap(original as Fn);
  hooked.add(replacement);
  owner![name] = replacement;
}

/** Hooks what Nest has loaded; returns whether it found Nest. */
export function instrumentNest(tell: (message: string) => void): boolean {
  let found = false;
  for (const [file, mod] of Object.entries(requireCache)) {
    for (const [pattern, hook] of FILES) {
      if (!pattern.test(file) || !mod?.loaded || hooked.has(mod.exports as object)) continue;
      hooked.add(mod.exports as object);
      found = true;
      try {
        hook(mod.exports as Record<string, unknown>);
      } catch (err) {
        tell(`recording NestJS (${file}) failed: ${(err as Error)?.message ?? err}`);
      }
    }
  }
  return found;
}

/** Every exception Nest's filters answer (a controller's, a guard's, a pipe's, the 404 of no route) is the request's. */
function hookExceptions(ExceptionsHandler: unknown): void {
  wrapOnce((ExceptionsHandler as Class | undefined)?.prototype, 'next', (next) => function (this: unknown, exception: unknown, host: unknown) {
    try {
      const res = (host as { getArgByIndex?: (i: number) => unknown })?.getArgByIndex?.(1);
      const ctx = contextOf(res);
      if (ctx !== undefined && ctx.error === undefined) ctx.error = exception;
    } catch {
      // Unrecorded.
    }
    return next.call(this, exception, host);
  });
}

/**
 * A route's handler is named as Nest's route table names it, `ArticlesController.findAll`, on the
 * timeline and in the routing panel: the handler Nest makes for it (a request-scoped controller's
 * is another), and the filters it may wrap that one in (host, version), which take its name.
 */
function hookRouteNames(RouterExplorer: unknown): void {
  const proto = (RouterExplorer as Class | undefined)?.prototype;
  const named = (make: (args: unknown[]) => string | undefined) => (create: Fn) => function (this: unknown, ...args: unknown[]) {
    const handler = create.apply(this, args);
    try {
      const name = make(args);
      if (typeof handler === 'function' && name) Object.defineProperty(handler, 'name', { value: name, configurable: true });
    } catch {
      // Left as Nest named it.
    }
    return handler;
  };
  const routeName = (controller: unknown, method: unknown) => (typeof controller === 'string' && controller && typeof method === 'string' ? `${controller}.${method}` : undefined);
  const innerName = (handler: unknown) => (typeof handler === 'function' && handler.name.includes('.') ? handler.name : undefined);
  wrapOnce(proto, 'createCallbackProxy', named(([instance, , method]) => routeName((instance as { constructor?: { name?: string } } | undefined)?.constructor?.name, method)));
  wrapOnce(proto, 'createRequestScopedHandler', named(([wrapper, , , , method]) => routeName((wrapper as { metatype?: { name?: string }; name?: unknown } | undefined)?.metatype?.name ?? (wrapper as { name?: unknown } | undefined)?.name, method)));
  wrapOnce(proto, 'applyHostFilter', named(([, handler]) => innerName(handler)));
  wrapOnce(proto, 'applyVersionFilter', named(([, , handler]) => innerName(handler)));
}

const LEVELS: Record<string, LogLevel> = { log: 'info', error: 'error', warn: 'warn', debug: 'debug', verbose: 'debug', fatal: 'error' };

/**
 * Nest's Logger, through which Nest and apps log, whatever logger backs it (ConsoleLogger, or the
 * app's own given to useLogger): each line goes to the running request with its context as the
 * logger's name. An instance's context is its own; a call's last string argument names one too.
 */
function hookLogger(Logger: unknown): void {
  const L = Logger as Class | undefined;
  for (const method of Object.keys(LEVELS)) {
    const level = LEVELS[method];
    const record = (self: { context?: unknown } | undefined, args: unknown[]) => {
      try {
        const ctx = currentContext();
        if (ctx === undefined || args.length === 0) return;
        const [message, ...rest] = args;
        const last = rest[rest.length - 1];
        const named = typeof self?.context === 'string' ? self.context : rest.length > 0 && typeof last === 'string' ? last : undefined;
        const extra = typeof self?.context === 'string' || named === undefined ? rest : rest.slice(0, -1);
        // error(message, stack, context): the stack rides along as context.
        const context = extra.filter((v) => v !== undefined);
        const text = typeof message === 'string' ? message : message instanceof Error ? message.message : JSON.stringify(message) ?? String(message);
        addLine(ctx, level, text, context.length === 0 ? undefined : context.length === 1 ? context[0] : context, 'nest', named);
      } catch {
        // Unrecorded.
      }
    };
    wrapOnce(L?.prototype, method, (original) => function (this: unknown, ...args: unknown[]) {
      record(this as { context?: unknown }, args);
      return original.apply(this, args);
    });
    wrapOnce(L, method, (original) => function (this: unknown, ...args: unknown[]) {
      record(undefined, args);
      return original.apply(this, args);
    });
  }
}

const names = (list: unknown) => (Array.isArray(list) ? list.map((item) => (item as { constructor?: { name?: string } })?.constructor?.name ?? 'anonymous').join(', ') : '');

/** Guards, pipes and interceptors as spans of their own on the timeline, named after their classes. */
function hookGuards(GuardsConsumer: unknown): void {
  wrapOnce((GuardsConsumer as Class | undefined)?.prototype, 'tryActivate', (tryActivate) => function (this: unknown, ...args: unknown[]) {
    const guards = args[0];
    if (!Array.isArray(guards) || guards.length === 0) return tryActivate.apply(this, args);
    return span(`guards ${names(guards)}`, () => tryActivate.apply(this, args));
  });
}

function hookPipes(PipesConsumer: unknown): void {
  wrapOnce((PipesConsumer as Class | undefined)?.prototype, 'apply', (apply) => function (this: unknown, ...args: unknown[]) {
    const pipes = args[2];
    if (!Array.isArray(pipes) || pipes.length === 0) return apply.apply(this, args);
    const { data } = (args[1] ?? {}) as { data?: unknown };
    return span(`pipes ${names(pipes)}${typeof data === 'string' ? ` (${data})` : ''}`, () => apply.apply(this, args));
  });
}

/** Interceptors wrap the handler in an Observable that runs when Nest subscribes to it: their span lasts until it completes. */
function hookInterceptors(InterceptorsConsumer: unknown): void {
  wrapOnce((InterceptorsConsumer as Class | undefined)?.prototype, 'intercept', (intercept) => function (this: unknown, ...args: unknown[]) {
    const interceptors = args[0];
    const end = Array.isArray(interceptors) && interceptors.length > 0 ? startSpan(`interceptors ${names(interceptors)}`) : undefined;
    if (end === undefined) return intercept.apply(this, args);
    let result: unknown;
    try {
      result = intercept.apply(this, args);
    } catch (err) {
      end(true);
      throw err;
    }
    return Promise.resolve(result).then((observable) => until(observable, end), (err: unknown) => {
      end(true);
      throw err;
    });
  });
}

interface Subscribable {
  constructor: new (subscribe: (subscriber: Observer) => () => void) => unknown;
  subscribe(observer: Observer): { unsubscribe(): void };
}
interface Observer {
  next(value: unknown): void;
  error(err: unknown): void;
  complete(): void;
}

/** The same Observable (of the app's own rxjs), passed through, that ends the span when it completes or fails. */
function until(value: unknown, end: (failed: boolean) => void): unknown {
  const observable = value as Subscribable | undefined;
  if (typeof observable?.subscribe !== 'function' || typeof observable.constructor !== 'function') {
    end(false);
    return value;
  }
  return new observable.constructor((subscriber) => {
    const subscription = observable.subscribe({
      next: (v) => subscriber.next(v),
      error: (err) => {
        end(true);
        subscriber.error(err);
      },
      complete: () => {
        end(false);
        subscriber.complete();
      },
    });
    return () => subscription.unsubscribe();
  });
}
