import express from 'express';
import express4 from 'express4';
import { describe, expect, it } from 'vitest';
import { allowedMethods, routeTable } from '../src/web/routes.js';

describe.each([['Express 5', express], ['Express 4', express4 as unknown as typeof express]])('the route table on %s', (_name, lib) => {
  const app = lib();
  app.get('/health', (_req, res) => res.send('ok'));
  const v1 = lib.Router();
  v1.get('/things/:id', (_req, res) => res.send('thing'));
  v1.post('/things', (_req, res) => res.send('made'));
  app.use('/v1', v1);

  it('names mounted routes with their mount path and says which match', () => {
    expect(routeTable(app, '/v1/things/7')).toEqual([
      { path: '/health', methods: ['GET', 'HEAD'], matches: false },
      { path: '/v1/things/:id', methods: ['GET', 'HEAD'], matches: true },
      { path: '/v1/things', methods: ['POST'], matches: false },
    ]);
  });

  it('knows the methods a mounted path allows', () => {
    expect(allowedMethods(app, '/v1/things')).toEqual(['POST']);
    expect(allowedMethods(app, '/nowhere')).toEqual([]);
  });
});
