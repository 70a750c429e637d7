export declare const root: boolean;
export declare const freePort: () => Promise<number>;
export declare function privateDir(prefix: string, user: string): string;
export declare const why: (err: unknown) => string;

export interface PostgresServer {
  url: string;
  /** Stop it (fast shutdown: connections are closed) and start it again on the same port and data. */
  pause(): void;
  resume(): void;
  /** Stop its processes where they are (SIGSTOP): connections stay open, nothing answers. thaw() lets them go on. */
  freeze(): void;
  thaw(): void;
  /** Stop it and remove its data. */
  stop(): void;
}

export declare function startPostgres(): Promise<PostgresServer | string>;

export declare function startNginx(upstream: string, location?: string): Promise<{ url: string; stop(): void } | string>;

export declare function startRedis(): Promise<{ url: string; stop(): void } | string>;
