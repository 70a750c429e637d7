import type { Snapshot } from '../recording/snapshot.js';
import type { Profile } from '../storage/profile.js';
import type { CorePanel, PanelInfo, PanelOptions } from './collector.js';
import { redactUrl } from './redact.js';

/**
 * Turn a snapshot into a Profile: the core panels built here, the app's own panels as they were
 * collected. A panel that throws costs its own data only: `tell` hears of it, and the profile
 * notes it.
 */
export function buildProfile(s: Snapshot, panels: CorePanel[], options: PanelOptions, tell: (message: string) => void): Profile {
  const profile: Profile = {
    token: s.token,
    parent: s.parent,
    ip: s.ip,
    method: s.request.method,
    url: redactUrl(s.url, options.redactKeys, s.params),
    status: s.response.status,
    time: s.time,
    duration: Math.round(s.duration * 1000) / 1000,
    type: 'request',
    collectors: {},
  };
  const failed = collectEach(panels, (panel) => panel.collect(s, options), profile.collectors, tell);
  // The raw CPU profile goes beside its panel, for the .cpuprofile download: the panel's JSON stays small.
  if (s.cpu?.profile !== undefined) profile.collectors.cpuprofile = s.cpu.profile;
  Object.assign(profile.collectors, s.extra);
  if (failed || s.extraErrors) profile.collectorErrors = { ...failed, ...s.extraErrors };
  return profile;
}

/** Each panel's data into `into`. One that throws is told, and returned with its message: it costs its own data only. */
export function collectEach<P extends PanelInfo>(
  panels: P[],
  collect: (panel: P) => unknown,
  into: Record<string, unknown>,
  tell: (message: string) => void,
): Record<string, string> | undefined {
  let failed: Record<string, string> | undefined;
  for (const panel of panels) {
    try {
      const data = collect(panel);
      if (data !== undefined) into[panel.id] = data;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      tell(`collector "${panel.id}" failed: ${message}`);
      (failed ??= {})[panel.id] = message;
    }
  }
  return failed;
}

/** A panel that fails fails on every request alike: each distinct message is told once. */
export function onceEach(tell: (message: string) => void): (message: string) => void {
  const told = new Set<string>();
  return (message) => {
    if (told.has(message)) return;
    told.add(message);
    tell(message);
  };
}
