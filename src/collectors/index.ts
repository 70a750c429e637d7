import type { ResolvedOptions } from '../options.js';
import type { Profile } from '../storage/profile.js';
import type { ProfileReader } from '../storage/reader.js';
import { profileFrom } from './build.js';
import type { CorePanel, PanelOptions } from './collector.js';
import { command } from './command.js';
import { config } from './config.js';
import { graphql } from './graphql.js';
import { cache } from './cache.js';
import { cpu } from './cpu.js';
import { mail } from './mail.js';
import { jobs } from './jobs.js';
import { ai } from './ai.js';
import { views } from './views.js';
import { db } from './db.js';
import { httpClient } from './http-client.js';
import { exception } from './exception.js';
import { logs } from './logs.js';
import { dumps } from './dumps.js';
import { translations } from './translations.js';
import { performance } from './performance.js';
import { request } from './request.js';
import { response } from './response.js';
import { routing } from './routing.js';
import { security } from './security.js';

/** The core panels in menu order. A new panel: its collector here, its view in views/panels/<id>.eta. */
export const corePanels: CorePanel[] = [command, request, response, security, graphql, exception, logs, dumps, performance, db, httpClient, cache, views, translations, mail, jobs, ai, cpu, routing, config] as CorePanel[];

export type { Collector, CorePanel, PanelInfo, PanelOptions } from './collector.js';

/** What the panels read of a profiler's options: the pages', or (the CLI, the MCP server) the environment's. */
export const panelOptionsOf = (o: ResolvedOptions): PanelOptions => ({
  redactKeys: o.redactKeys,
  slowQuery: o.slowQuery,
  knownHosts: [...o.allowedHosts, ...o.linkHosts],
});

/** A stored profile as the pages, the CLI and the MCP server show it: its panels derived from what was stored. */
export async function readProfile(reader: ProfileReader, token: string, options: PanelOptions, tell: (message: string) => void = () => {}): Promise<Profile | undefined> {
  const stored = await reader.read(token);
  return stored && profileFrom(stored, corePanels, options, tell);
}
