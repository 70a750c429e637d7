import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { Redis } from 'ioredis';

/** A healthy status check is kept this long in Redis; a failing one is never kept. */
const TTL_S = 5;

/** The public status checks' results, cached in Redis: what the cache panel shows in the demo. */
export class StatusCache {
  private readonly redis: Redis;

  constructor(url: string) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
    // Trouble with Redis is no trouble of the service's: the check runs uncached.
    this.redis.on('error', () => {});
  }

  async healthy(name: string): Promise<boolean> {
    try {
      return (await this.redis.get(`status:${name}`)) === 'ok';
    } catch {
      return false;
    }
  }

  async remember(name: string): Promise<void> {
    try {
      await this.redis.set(`status:${name}`, 'ok', 'EX', TTL_S);
    } catch {
      // Uncached.
    }
  }

  close(): void {
    this.redis.disconnect();
  }
}

const freePort = () => new Promise<number>((resolve, reject) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    server.close(() => resolve(port));
  }).on('error', reject);
});

const accepts = (port: number) => new Promise<boolean>((resolve) => {
  const socket = connect({ port, host: '127.0.0.1' }, () => {
    socket.destroy();
    resolve(true);
  }).on('error', () => resolve(false));
});

/**
 * Debian's redis-server on a private port, in memory only, for as long as the demo runs; undefined
 * where there is none. A shell holds it and waits on a pipe from this process: however the demo
 * ends (a signal, a crash, an abort), the pipe closes and the shell stops the server.
 */
export async function privateRedis(): Promise<{ url: string; stop(): void } | undefined> {
  const bin = ['/usr/bin/redis-server', '/usr/sbin/redis-server'].find((b) => existsSync(b));
  if (bin === undefined) return undefined;
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const keeper = spawn('/bin/sh', ['-c', '"$@" & server=$!; cat >/dev/null; kill $server', 'redis-keeper', bin, ...args], { stdio: ['pipe', 'ignore', 'ignore'] });
  keeper.on('error', () => {});
  const stop = () => void keeper.stdin.end();
  for (let i = 0; i < 50 && keeper.exitCode === null; i++) {
    if (await accepts(port)) return { url: `redis://127.0.0.1:${port}`, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  stop();
  return undefined;
}
