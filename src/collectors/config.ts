import type { ConfigData } from '../recording/process-config.js';
import type { CorePanel } from './collector.js';

export type { ConfigData } from '../recording/process-config.js';

/** The process that served the request, as its writer stored it once (see recording/process-config.ts). */
export const config: CorePanel<ConfigData> = {
  id: 'config',
  title: 'Configuration',
  collect: (s) => s.config as ConfigData | undefined,
};
