import type { ProfileSummary } from '../storage/profile.js';
import type { CorePanel } from './collector.js';
import { corePanels } from './index.js';

const packing = new Map(corePanels.filter((p) => p.pack !== undefined).map((p) => [p.id, p as CorePanel]));

/**
 * The panels as stored: each core panel packed (see CorePanel.pack), the app's own as they are.
 * A core panel's data of a shape its pack() does not know (a profile given to the store by hand)
 * is kept apart, as it is.
 */
export function packPanels(collectors: Record<string, unknown>, summary: ProfileSummary): { panels: Record<string, unknown>; asIs?: Record<string, unknown> } {
  const panels: Record<string, unknown> = {};
  let asIs: Record<string, unknown> | undefined;
  for (const id in collectors) {
    const panel = packing.get(id);
    if (panel === undefined) {
      panels[id] = collectors[id];
      continue;
    }
    try {
      panels[id] = panel.pack!(collectors[id], summary);
    } catch {
      (asIs ??= {})[id] = collectors[id];
    }
  }
  return { panels, asIs };
}

/** The panels as collected, from what packPanels() stored. */
export function unpackPanels(panels: Record<string, unknown>, asIs: Record<string, unknown> | undefined, summary: ProfileSummary): Record<string, unknown> {
  const collectors: Record<string, unknown> = {};
  for (const id in panels) {
    const panel = packing.get(id);
    collectors[id] = panel === undefined ? panels[id] : panel.unpack!(panels[id] as never, summary);
  }
  return asIs === undefined ? collectors : Object.assign(collectors, asIs);
}
