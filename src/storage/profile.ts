import { packPanels } from '../collectors/stored.js';

/** The columns of a stored profile that search and lists read, without the panel data. */
export interface ProfileSummary {
  token: string;
  parent: string | null;
  ip: string;
  method: string;
  url: string;
  status: number;
  /** Epoch milliseconds at arrival. */
  time: number;
  /** Milliseconds. */
  duration: number;
  type: string;
  /** The instance that served it: host name and pid, or the `instance` option. Null in profiles from before it was recorded. */
  instance?: string | null;
}

/** A recorded request: plain JSON, the unit everything else passes around. */
export interface Profile extends ProfileSummary {
  /** Panel data by collector id; a panel with nothing to show is absent. */
  collectors: Record<string, unknown>;
  /** Collectors that threw, by id, with their message: the panel says so instead of vanishing. */
  collectorErrors?: Record<string, string>;
}

/**
 * A profile ready for storage: its summary columns, its panels as JSON (`panels`: packed, see
 * CorePanel.pack; `collectors` in rows from before packing), and the config panel apart: the same
 * for every request of a process, it is stored once (the configs table) and CONFIG_APART holds
 * its place among the panels.
 */
export interface StoredProfile {
  summary: ProfileSummary;
  data: string;
  config?: string;
}

export const CONFIG_APART = 0;

let lastConfig: unknown;
let lastConfigJson = '';

/** The config panel is one frozen object per process (see collectors/config.ts): serialised once. */
function configJson(config: unknown): string {
  if (config === lastConfig) return lastConfigJson;
  const json = JSON.stringify(config);
  if (Object.isFrozen(config)) [lastConfig, lastConfigJson] = [config, json];
  return json;
}

/**
 * Serialise one profile alone, packing its panels in place (see CorePanel.pack): the profile is
 * the caller's to drop. A panel that cannot be serialised (a BigInt, a cycle, a getter that
 * throws, in an app's own panel) is replaced by a note of why: it costs its own data only, never
 * the profile, and never the batch it is written with.
 */
export function serialise(profile: Profile): StoredProfile {
  const { collectors, collectorErrors, ...summary } = profile;
  const config = collectors.config === undefined ? undefined : configJson(collectors.config);
  const { panels, asIs } = packPanels(collectors, summary);
  if (config !== undefined) panels.config = CONFIG_APART;
  // `collectors` holds what could not be packed, as it is (see profileOf).
  try {
    return { summary, data: JSON.stringify({ panels, collectors: asIs, collectorErrors }), config };
  } catch {
    const errors: Record<string, string> = { ...collectorErrors };
    const storable = (given: Record<string, unknown> | undefined) => {
      if (given === undefined) return undefined;
      const kept: Record<string, unknown> = {};
      for (const [id, data] of Object.entries(given)) {
        try {
          JSON.stringify(data);
          kept[id] = data;
        } catch (err) {
          errors[id] = `its data could not be stored: ${(err as Error)?.message ?? err}`;
        }
      }
      return kept;
    };
    return { summary, data: JSON.stringify({ panels: storable(panels), collectors: storable(asIs), collectorErrors: errors }), config };
  }
}
