import type { CorePanel } from './collector.js';
import { config } from './config.js';
import { cpu } from './cpu.js';
import { db } from './db.js';
import { httpClient } from './http-client.js';
import { exception } from './exception.js';
import { logs } from './logs.js';
import { performance } from './performance.js';
import { request } from './request.js';
import { response } from './response.js';
import { routing } from './routing.js';

/** The core panels in menu order. A new panel: its collector here, its view in views/panels/<id>.eta. */
export const corePanels: CorePanel[] = [request, response, exception, logs, performance, db, httpClient, cpu, routing, config] as CorePanel[];

export type { Collector, CorePanel, PanelInfo, PanelOptions } from './collector.js';
