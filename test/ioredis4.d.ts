declare module 'ioredis4';
