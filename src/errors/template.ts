/** A template that failed to render: its name as the app gave it, its file, and the line where the engine says. */
export interface FailedTemplate {
  name: string;
  file: string;
  line?: number;
}

/**
 * Render errors by the template they came from, noted where the view renders (see
 * instruments/views.ts): the exception page shows the template's code first, as a frame of the app's.
 */
export const failedTemplates = new WeakMap<object, FailedTemplate>();
