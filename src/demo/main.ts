import { createDemoApp } from './app.js';

const port = Number(process.env.PORT ?? 8000);
const host = process.env.HOST ?? '127.0.0.1';
const { app, profiler } = createDemoApp();

const server = app.listen(port, host, () => {
  const base = `http://${host}:${port}`;
  console.log(`Platform service on ${base}`);
  console.log(`Profiler on ${base}/_profiler/`);
});

const shutdown = () => server.close(() => {
  profiler.close();
  process.exit(0);
});
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
