#!/usr/bin/env node
import { run } from './cli/run.js';

const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
process.once('SIGTERM', () => stop.abort());
void Promise.resolve(run(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  tty: process.stdout.isTTY,
}, process.env, stop.signal)).then((code) => {
  process.exitCode = code;
});
