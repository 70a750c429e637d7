// The profiler's matchers on vitest's expect (setupFiles: ['express-web-profiler/vitest']).
import 'vitest';

interface ProfileMatchers<R = unknown> {
  toHaveQueryCount(expected: number): Promise<R>;
  toHaveNPlusOne(): Promise<R>;
  toHaveRunQuery(pattern: string | RegExp): Promise<R>;
  toHaveSentMailTo(address: string | RegExp): Promise<R>;
  toHaveThrown(pattern?: string | RegExp): Promise<R>;
  toHaveNoMissingTranslations(): Promise<R>;
}

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Assertion<T = any> extends ProfileMatchers<void> {}
}
