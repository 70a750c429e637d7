import type { ErrorSummary } from '../recording/inside-capture.js';
import type { CorePanel } from './collector.js';
import { duration } from './inside-layers.js';

export interface QueuedData {
  queue: string;
  name?: string;
  ids: string[];
  start: number;
  duration: number;
  caller?: string;
  error?: ErrorSummary;
}

export interface JobsData {
  count: number;
  jobs: QueuedData[];
}

/** The jobs a request or command queued; their own profiles (type command, `JOB`) name it as their parent. */
export const jobs: CorePanel<JobsData> = {
  id: 'jobs',
  title: 'Jobs',
  collect(s) {
    const queued = s.inside?.queued;
    if (queued === undefined || queued.length === 0) return undefined;
    return {
      count: queued.reduce((n, q) => n + Math.max(q.ids.length, 1), 0),
      jobs: queued.map((q) => ({
        queue: q.queue,
        ...(q.name !== undefined ? { name: q.name } : {}),
        ids: q.ids,
        start: q.start,
        duration: duration(q.start, q.end),
        ...(q.caller !== undefined ? { caller: q.caller } : {}),
        ...(q.error !== undefined ? { error: q.error } : {}),
      })),
    };
  },
  badge: (data) => data.count,
};
