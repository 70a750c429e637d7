/** An error that carries its HTTP status and headers, as the 404 and 405 of notFound do. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
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
