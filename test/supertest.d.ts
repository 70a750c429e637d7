declare module 'supertest';
