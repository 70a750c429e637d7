/**
 * An error that carries its HTTP status and headers, as the 404 and 405 of notFound do; shaped as
 * http-errors shapes its own (`status`, `statusCode`, `expose`), which app error handlers read.
 */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly expose: boolean;

  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
    this.statusCode = status;
    this.expose = status < 500;
  }
}

export class NotFoundError extends HttpError {
  constructor(message: string) {
    super(404, message);
  }
}

export class MethodNotAllowedError extends HttpError {
  constructor(message: string, allow: string[]) {
    super(405, message, { Allow: allow.join(', ') });
  }
}
