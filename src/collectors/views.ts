import type { CapturedRender } from '../recording/inside-capture.js';
import type { CorePanel } from './collector.js';
import { duration, layerAt } from './inside-layers.js';

/** A render as the panel shows it: its capture, timed by duration, under the layer that ran it. */
export interface RenderData extends Omit<CapturedRender, 'end' | 'values'> {
  /** The locals' values, where the viewLocals option keeps them (redacted). */
  values?: unknown;
  duration: number;
  layer?: string;
}

export interface ViewsData {
  count: number;
  /** Milliseconds in renders, nested ones counted once. */
  time: number;
  errors: number;
  renders: RenderData[];
}

export const views: CorePanel<ViewsData> = {
  id: 'views',
  title: 'Views',
  collect(s) {
    const recorded = s.inside?.renders;
    if (recorded === undefined || recorded.length === 0) return undefined;
    let time = 0;
    const renders = recorded.map((r): RenderData => {
      const data: RenderData = { name: r.name, file: r.file, engine: r.engine, locals: r.locals, start: r.start, duration: duration(r.start, r.end) };
      if (r.values !== undefined) data.values = r.values;
      if (r.error !== undefined) data.error = r.error;
      if (r.parent !== undefined) data.parent = r.parent;
      else time += data.duration;
      const layer = layerAt(s.spans, r.start);
      if (layer !== undefined) data.layer = layer;
      return data;
    });
    return { count: renders.length, time: Math.round(time * 1000) / 1000, errors: renders.filter((r) => r.error).length, renders };
  },
  badge: (data) => data.count,
};
