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
}

/** A recorded request: plain JSON, the unit everything else passes around. */
export interface Profile extends ProfileSummary {
  /** Panel data by collector id; a panel with nothing to show is absent. */
  collectors: Record<string, unknown>;
  /** Collectors that threw, by id, with their message: the panel says so instead of vanishing. */
  collectorErrors?: Record<string, string>;
}
