import { Eta } from 'eta';
import path from 'node:path';
import type { Express } from 'express';
import { page } from './admin.js';

/** The admin's pages, rendered as any Express app renders its views: res.render through an engine of the app's. */
export function dashboardViews(app: Express): void {
  const views = path.resolve(__dirname, '../../views/demo');
  const eta = new Eta({ views, autoEscape: true, autoTrim: false, cache: true });
  app.engine('eta', (file: string, locals: object, done: (err: unknown, html?: string) => void) => {
    try {
      done(null, page(String((locals as { title?: unknown }).title ?? ''), eta.render(path.basename(file), locals)));
    } catch (err) {
      done(err);
    }
  });
  app.set('views', views);
  app.set('view engine', 'eta');
}
