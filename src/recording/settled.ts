/**
 * Runs fn and calls `done` once it has settled: at once, or when the promise it returns does
 * (`failed` and the error when it threw or rejected). Returns what fn returns, a promise settling as
 * fn's does, so that a rejection nobody handles is still reported as the app's.
 */
export function whenSettled<T>(fn: () => T, done: (failed: boolean, err?: unknown) => void): T {
  let result: T;
  try {
    result = fn();
  } catch (err) {
    done(true, err);
    throw err;
  }
  if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
    return (result as unknown as PromiseLike<unknown>).then(
      (value) => {
        done(false);
        return value;
      },
      (err: unknown) => {
        done(true, err);
        throw err;
      },
    ) as T;
  }
  done(false);
  return result;
}
