// express-web-profiler/testing: a request's profile in the app's own tests.
import { AssertionError } from 'node:assert';
import type { Profile } from '../storage/profile.js';
import { errorText, exception, madeAs, mailTo, missingTranslations, nPlusOne, queryCount, queryMatching, type Verdict } from './checks.js';
import type { Who } from '../redaction/who.js';
import { profileOf, tokenOf, type ProfileOfOptions, type TestedProfile } from './profile-of.js';
import { running } from './registry.js';
import type { ExceptionData } from '../errors/describe.js';
import type { LogsData } from '../collectors/logs.js';

export { profileOf, tokenOf, type ProfileOfOptions, type TestedProfile };
export type { Profile };

/** What the matchers and assertions are given: a response, its headers, a token, or a profile already read. */
const profileFor = async (x: unknown, options?: ProfileOfOptions): Promise<Profile> =>
  x !== null && typeof x === 'object' && typeof (x as Profile).collectors === 'object' && typeof (x as Profile).token === 'string' ? (x as Profile) : profileOf(x, options);

type Check = (profile: Profile, ...args: never[]) => Verdict;

/** The checks as vitest and jest matchers: `await expect(res).toHaveQueryCount(2)`, and `.not`. */
const matcher = (check: Check) => async function (this: { isNot?: boolean }, received: unknown, ...args: unknown[]) {
  const verdict = check(await profileFor(received), ...(args as never[]));
  return { pass: verdict.pass, message: verdict.message };
};

export const matchers = {
  toHaveQueryCount: matcher(queryCount),
  toHaveNPlusOne: matcher(nPlusOne),
  toHaveRunQuery: matcher(queryMatching),
  toHaveSentMailTo: matcher(mailTo),
  toHaveThrown: matcher(exception),
  /** Passes when the request was made by the user these fields name: `await expect(res).toBeMadeAs({ id: 7 })`, `{ username: 'ada', via: 'session' }`. */
  toBeMadeAs: matcher(madeAs),
  /** Passes when no key the request translated is missing: `await expect(res).toHaveNoMissingTranslations()`. */
  toHaveNoMissingTranslations: matcher((p: Profile) => {
    const verdict = missingTranslations(p);
    return { pass: !verdict.pass, message: verdict.message };
  }),
};

/** The checks as node:assert-style functions: they resolve, or reject with an AssertionError that says what ran. */
const assertion = (check: Check, want: boolean) => async (x: unknown, ...args: unknown[]): Promise<void> => {
  const verdict = check(await profileFor(x), ...(args as never[]));
  if (verdict.pass !== want) throw new AssertionError({ message: verdict.message(), stackStartFn: assertion });
};

export const assertQueryCount: (x: unknown, expected: number) => Promise<void> = assertion(queryCount, true);
export const assertNoNPlusOne: (x: unknown) => Promise<void> = assertion(nPlusOne, false);
export const assertQuery: (x: unknown, pattern: string | RegExp) => Promise<void> = assertion(queryMatching, true);
export const assertMailSent: (x: unknown, to: string | RegExp) => Promise<void> = assertion(mailTo, true);
export const assertNoException: (x: unknown) => Promise<void> = assertion(exception, false);
export const assertMadeAs: (x: unknown, expected: Partial<Who>) => Promise<void> = assertion(madeAs, true);
export const assertNoMissingTranslations: (x: unknown) => Promise<void> = assertion(missingTranslations, false);

/**
 * What a failed test is shown: each request of this process's profilers that answered 5xx or threw
 * from `since` on, with its exception (the app's frames), its last log lines and its profile's URL.
 */
export async function failureReport(since: number): Promise<string | undefined> {
  const parts: string[] = [];
  for (const profiler of running()) {
    for (const failure of profiler.failures(since)) {
      const profile = await profiler.read(failure.token).catch(() => undefined);
      if (profile === undefined) continue;
      const chain = (profile.collectors.exception as ExceptionData | undefined)?.chain ?? [];
      const lines = ((profile.collectors.logs as LogsData | undefined)?.lines ?? []).slice(-5).map((l) => `    [${l.level}] ${l.message}`);
      parts.push([
        `${profile.method} ${profile.url} answered ${profile.status}`,
        ...chain.map(errorText),
        ...(lines.length > 0 ? ['  last log lines:', ...lines] : []),
        `  profile: ${new URL(profile.url).origin}/_profiler/${profile.token}`,
      ].join('\n'));
    }
  }
  return parts.length === 0 ? undefined : `The requests that failed during this test (express-web-profiler):\n\n${parts.join('\n\n')}`;
}
