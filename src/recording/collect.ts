import type { ResolvedOptions } from '../options.js';
import type { RequestContext } from './context.js';

/** What the profile pages need of any panel: its place in the menu and its badge. */
export interface PanelInfo<T = unknown> {
  id: string;
  title: string;
  /** A short badge for the panel menu (a count, a status), read from the stored data. */
  badge?(data: T): string | number | undefined;
}

/**
 * A panel of the app's own. collect() runs on the request's thread when the response has
 * finished, with the live req and res, and must return plain data; keep it quick.
 */
export interface Collector<T = unknown> extends PanelInfo<T> {
  collect(ctx: RequestContext, options: ResolvedOptions): T | undefined;
}

/** Each panel's data into `into`. One that throws is told, and returned with its message: it costs its own data only. */
export function collectEach<P extends PanelInfo>(
  panels: P[],
  collect: (panel: P) => unknown,
  into: Record<string, unknown>,
  tell: (message: string) => void,
): Record<string, string> | undefined {
  let failed: Record<string, string> | undefined;
  for (const panel of panels) {
    try {
      const data = collect(panel);
      if (data !== undefined) into[panel.id] = data;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      tell(`collector "${panel.id}" failed: ${message}`);
      (failed ??= {})[panel.id] = message;
    }
  }
  return failed;
}

/** A panel that fails fails on every request alike: each distinct message is told once. */
export function onceEach(tell: (message: string) => void): (message: string) => void {
  const told = new Set<string>();
  return (message) => {
    if (told.has(message)) return;
    told.add(message);
    tell(message);
  };
}
