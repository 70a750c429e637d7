import path from 'node:path';
import type { ProfilerOptions } from '../index.js';

export type AppEnv = 'dev' | 'staging' | 'prod';

export interface DemoConfig {
  env: AppEnv;
  port: number;
  host: string;
  adminHost: string;
  /** SQLite file of accounts and refused sign-ins. */
  platformDb: string;
  /** SQLite file of the profiles. */
  profilerDb: string;
  profilerSecret?: string;
  /** Retention cap of the profiler (WEB_PROFILER_MAX_PROFILES). */
  maxProfiles: number;
  /** Where the status checks are cached (REDIS_URL); none: uncached. */
  redisUrl?: string;
}

export function configFrom(env: NodeJS.ProcessEnv = process.env): DemoConfig {
  const appEnv = (env.APP_ENV ?? 'dev').toLowerCase();
  if (appEnv !== 'dev' && appEnv !== 'staging' && appEnv !== 'prod') {
    throw new Error(`APP_ENV must be dev, staging or prod, not "${env.APP_ENV}"`);
  }
  const storage = path.resolve(env.STORAGE_DIR ?? 'storage');
  return {
    env: appEnv,
    port: Number(env.PORT ?? 8000),
    host: env.HOST ?? '127.0.0.1',
    adminHost: (env.ADMIN_HOST ?? 'admin.localhost').toLowerCase(),
    platformDb: env.PLATFORM_DB ?? path.join(storage, 'platform.sqlite'),
    profilerDb: env.WEB_PROFILER_DB ?? path.join(storage, `profiler-${appEnv}.sqlite`),
    profilerSecret: env.WEB_PROFILER_SECRET || undefined,
    maxProfiles: Number(env.WEB_PROFILER_MAX_PROFILES ?? 10_000),
    redisUrl: env.REDIS_URL || undefined,
  };
}

/** What each environment means for the profiler: dev shows everything, staging records behind a check, prod nothing. */
export function profilerOptions(config: DemoConfig): ProfilerOptions {
  switch (config.env) {
    case 'dev':
      return { enabled: true, debug: true, database: config.profilerDb, secret: config.profilerSecret, allowedHosts: [config.adminHost], maxProfiles: config.maxProfiles, insights: true };
    case 'staging':
      return { enabled: true, debug: false, database: config.profilerDb, secret: config.profilerSecret, allowedHosts: [config.adminHost], maxProfiles: config.maxProfiles, insights: true };
    case 'prod':
      return { enabled: false, debug: false };
  }
}
