/**
 * A database driver the profiler records. One file per driver: how to recognise the package's
 * loaded, and how to hook them, once, so that every statement the app runs on any of its
 * connections lands in the running request's profile (see ../inside.ts).
 */
export interface DriverAdapter {
  /** The package's name, as the app imports it. */
  name: string;
  /** The panel its records show on. */
  panel: DriverPanel;
  /** Its main module's path inside node_modules, as the require cache holds it. */
  main: RegExp;
  /** Whether `loaded` is this package's: for instrument(), with a module the app passes itself. */
  matches(loaded: unknown): boolean;
  /**
   * Hook the package's prototypes. Called once per copy of the package, with its main module's
   * file when the require cache holds it. `tell` says, once, what cannot be recorded.
   */
  hook(loaded: unknown, file: string | undefined, tell: (message: string) => void): void;
  /** EXPLAIN a SELECT on the connection it ran on: the plan's rows, in the order the database gave them. */
  explain?(connection: object, sql: string, params: unknown): Promise<PlanRow[]> | PlanRow[];
}

/** The panels libraries' records show on, in menu order. */
export const DRIVER_PANELS = ['db', 'cache', 'mail', 'ai', 'jobs', 'security', 'translations'] as const;
export type DriverPanel = (typeof DRIVER_PANELS)[number];

/** One row of a query plan: its text, and its parent's id for a tree (SQLite), or its depth (PostgreSQL's indented text). */
export interface PlanRow {
  id: number;
  parent: number;
  detail: string;
}

/** The prototype on `proto`'s chain (short of Object's) that owns `key`: where a method is wrapped once for every instance. */
export function ownerOf(proto: object | null | undefined, key: string): Record<string | symbol, unknown> | undefined {
  for (let p = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    if (Object.hasOwn(p, key)) return p as Record<string | symbol, unknown>;
  }
  return undefined;
}
