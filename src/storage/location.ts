/** A database option that names a PostgreSQL server rather than a SQLite file. */
export const isPostgresUrl = (database: string): boolean => /^postgres(ql)?:\/\//i.test(database);

/** The PostgreSQL schema name: a plain lowercase identifier, so that it needs no quoting wherever it is shown. */
export const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** A connection string as it may be shown: without its password. */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href;
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}
