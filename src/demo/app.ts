import express from 'express';
import { logger, webProfiler } from '../index.js';

/** The demo platform service, built on the public entry only, as any user's app would be. */
export function createDemoApp() {
  const profiler = webProfiler();
  const app = express();
  app.use(profiler);
  app.use(express.json());

  app.get('/', (req, res) => {
    req.log.info('Rendering the home page');
    res.type('html').send('<!doctype html><html><head><title>Platform</title></head><body><h1>Platform service</h1></body></html>');
  });

  app.head('/pub/status/web', (_req, res) => {
    logger.debug('web status checked');
    res.status(200).end();
  });

  app.use(profiler.notFound);
  app.use(profiler.errorHandler);
  return { app, profiler };
}
