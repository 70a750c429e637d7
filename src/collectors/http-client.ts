import type { CapturedCall, ErrorSummary } from '../recording/inside-capture.js';
import type { CallEntry } from '../recording/inside.js';
import { isToken, profileLink } from '../recording/token.js';
import type { CorePanel } from './collector.js';
import { duration, layerAt } from './inside-layers.js';
import { isLoopbackHost } from '../recording/url.js';

export interface CallData {
  api: CallEntry['api'];
  method: string;
  url: string;
  status?: number;
  start: number;
  duration: number;
  error?: ErrorSummary;
  requestHeaders: Record<string, unknown>;
  responseHeaders: Record<string, unknown>;
  requestSize?: number;
  responseSize?: number;
  caller?: string;
  layer?: string;
  /** The called app's profile, when it runs a profiler too (its X-Debug-Token and X-Debug-Token-Link). */
  token?: string;
  link?: string;
}

export interface HttpClientData {
  count: number;
  time: number;
  /** Calls that failed or answered 4xx/5xx. */
  errors: number;
  requests: CallData[];
  omitted: number;
}

const header = (headers: Record<string, unknown>, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? String(value[0]) : value === undefined ? undefined : String(value);
};

export const httpClient: CorePanel<HttpClientData> = {
  id: 'http_client',
  title: 'HTTP calls',
  collect(s, options) {
    const inside = s.inside;
    if (inside === undefined || inside.callCount === 0) return undefined;
    let time = 0;
    const requests = inside.calls.map((c: CapturedCall): CallData => {
      const took = duration(c.start, c.end);
      time += took;
      const responseHeaders = (c.responseHeaders ?? {}) as Record<string, unknown>;
      const token = header(responseHeaders, 'x-debug-token');
      const call: CallData = {
        api: c.api,
        method: c.method,
        url: c.url,
        start: c.start,
        duration: took,
        requestHeaders: (c.requestHeaders ?? {}) as Record<string, unknown>,
        responseHeaders,
      };
      if (c.status !== undefined) call.status = c.status;
      if (c.error !== undefined) call.error = c.error;
      if (c.requestSize !== undefined) call.requestSize = c.requestSize;
      if (c.responseSize !== undefined) call.responseSize = c.responseSize;
      if (c.caller !== undefined) call.caller = c.caller;
      const layer = layerAt(s.spans, c.start);
      if (layer !== undefined) call.layer = layer;
      if (isToken(token)) {
        call.token = token;
        const link = profileLink(header(responseHeaders, 'x-debug-token-link'), token, (host) => isLoopbackHost(host) || options.knownHosts?.includes(host) === true);
        if (link !== undefined) call.link = link;
      }
      return call;
    });
    return {
      count: inside.callCount,
      time: Math.round(time * 1000) / 1000,
      errors: requests.filter((r) => r.error !== undefined || (r.status ?? 0) >= 400).length,
      requests,
      omitted: inside.callCount - requests.length,
    };
  },
  badge: (data) => data.count,
};
