/** A database option that names a PostgreSQL server rather than a SQLite file. */
export const isPostgresUrl = (database: string): boolean => /^postgres(ql)?:\/\//i.test(database);

/** The PostgreSQL schema name: a plain lowercase identifier, so that it needs no quoting wherever it is shown. */
export const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** A connection string as it may be shown: without its password, in the user part or as a `?password=` parameter (pg reads both). */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const key of [...u.searchParams.keys()]) if (/pass/i.test(key)) u.searchParams.set(key, '***');
    return u.href;
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@').replace(/([?&][^=&]*pass[^=&]*=)[^&]*/gi, '$1***');
  }
}
