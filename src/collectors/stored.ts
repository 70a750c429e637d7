import type { ProfileSummary } from '../storage/profile.js';
import type { CorePanel } from './collector.js';
import { corePanels } from './index.js';

/** The panels that read rows of their own packed shape. */
let packing: Map<string, CorePanel> | undefined;

/** The panels as collected, from a row of packed panels (stored before records). */
export function unpackPanels(panels: Record<string, unknown>, asIs: Record<string, unknown> | undefined, summary: ProfileSummary): Record<string, unknown> {
  const collectors: Record<string, unknown> = {};
  for (const id in panels) {
    const panel = (packing ??= new Map(corePanels.filter((p) => p.unpack !== undefined).map((p) => [p.id, p]))).get(id);
    collectors[id] = panel === undefined ? panels[id] : panel.unpack!(panels[id] as never, summary);
  }
  return asIs === undefined ? collectors : Object.assign(collectors, asIs);
}
