/** A route handler's name as a framework gives it, `Controller.method` (Nest's, see instruments/nestjs.ts): a plain Express handler's function name is no such name. */
export const isControllerMethod = (name: string): boolean => CONTROLLER_METHOD.test(name);

const CONTROLLER_METHOD = /^[A-Za-z_$][\w$]*\.[A-Za-z_$][\w$]*$/;

/** The handler a framework named for the route that answered: the last route handler so named in a described trail. */
export function handlerNamed(trail: unknown[]): string | undefined {
  let found: string | undefined;
  for (let i = 0; i < trail.length; i += 2) {
    const described = trail[i];
    if (typeof described === 'string' && described.startsWith('handler\t') && isControllerMethod(described.slice(8))) found = described.slice(8);
  }
  return found;
}
