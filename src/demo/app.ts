import express, { type NextFunction, type Request, type Response } from 'express';
import { randomBytes } from 'node:crypto';
import { webProfiler } from '../index.js';
import { adminRoutes } from './admin.js';
import { apiRoutes } from './api.js';
import { profilerOptions, type DemoConfig } from './config.js';
import { PlatformDb } from './platform-db.js';
import { burstAlerts } from './alerts.js';
import { StatusCache } from './status-cache.js';
import { dashboardViews } from './views.js';

export interface SeedAccount {
  username: string;
  password: string;
}

export interface AdminStart {
  /** The admin account to make when the database has none (default: `dev` with a random password). */
  seed?: SeedAccount;
  /** Give the admin account a new random password. */
  resetAdmin?: boolean;
}

/**
 * The platform service of the observed surface, built on the public entry as any user's app is.
 * One process serves the API host and the admin host, told apart by the Host header.
 */
export async function createDemoApp(config: DemoConfig, { seed, resetAdmin = false }: AdminStart = {}) {
  const db = new PlatformDb(config.platformDb);
  const newPassword = () => randomBytes(9).toString('base64url');
  let admin: { username: string; password?: string };
  const existing = db.adminNames()[0];
  if (existing === undefined) {
    admin = seed ?? { username: 'dev', password: newPassword() };
    await db.createAccount(admin.username, admin.password!, 'admin');
  } else if (resetAdmin) {
    admin = { username: existing, password: newPassword() };
    await db.setPassword(existing, admin.password!);
  } else {
    admin = { username: existing };
  }

  const profiler = webProfiler(profilerOptions(config));
  const app = express();
  app.disable('x-powered-by');
  // Trailing slashes matter (as in the observed service): /_profiler and /_profiler/ differ.
  app.set('strict routing', true);
  app.use(profiler);
  dashboardViews(app);
  const cache = config.redisUrl ? new StatusCache(config.redisUrl) : undefined;

  // Each host's routes are a router of the app that steps aside (next('router')) on the other host:
  // real layers, so the profiler's route table and the 404/405 logic see them.
  const isAdminHost = (req: Request) => (req.hostname ?? '').toLowerCase() === config.adminHost;
  const onHost = (admin: boolean, routes: express.Router) => {
    const router = express.Router({ strict: true });
    router.use((req: Request, _res: Response, next: NextFunction) => next(isAdminHost(req) === admin ? undefined : 'router'));
    router.use(routes);
    return router;
  };
  const refused = burstAlerts(db, profiler);
  app.use(onHost(false, apiRoutes(db, { cache, refused })));
  app.use(onHost(true, adminRoutes(db, { profiler: profiler.options.enabled ? '/_profiler/' : undefined }, refused)));

  app.use(profiler.notFound);
  app.use(profiler.errorHandler);

  return {
    app,
    profiler,
    db,
    /** The admin account, with its password when this start made it or gave it a new one (shown once). */
    admin,
    close() {
      cache?.close();
      profiler.close();
      db.close();
    },
  };
}
