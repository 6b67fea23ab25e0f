// The one log of a running service: pino JSON lines on stdout, or the same lines made readable by
// pino-pretty when stdout is a terminal (LOG_FORMAT). Start-up, requests, jobs and a failed start all
// write through it; nothing else prints.
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { safePath } from './http.ts';
import { loggableError } from './logging.ts';

export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * The text Fastify is given for its own "Server listening at …" lines (one per interface address), which
 * the logger drops: main.ts writes the one `listening on <url>` line people and tests look for.
 */
export const FASTIFY_LISTEN_TEXT = 'fastify: listening';

/** Never bodies, query strings or tokens in the log (README: Security). */
export const logSerializers = {
  req: (req: { method: string; url: string; id: string }) => ({ id: req.id, method: req.method, path: safePath(req.url) }),
  // Every logged error, wherever it is logged: its type, message, stack and codes, never the data a driver
  // or a library attached to it.
  err: (error: unknown) => loggableError(error),
};

export interface LoggerSettings {
  level: string;
  format: LogFormat;
  /** Where lines go; stdout by default (tests pass a stream to read them). */
  destination?: DestinationStream;
}

/** The options of every logger of the service (main.ts's, and those tests give buildApp). */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    serializers: logSerializers,
    hooks: {
      logMethod(args, method) {
        if (args[0] === FASTIFY_LISTEN_TEXT) return;
        method.apply(this, args);
      },
    },
  };
}

export async function createLogger(settings: LoggerSettings): Promise<Logger> {
  const options = loggerOptions(settings.level);
  const pretty = settings.format === 'pretty' || (settings.format === 'auto' && !settings.destination && process.stdout.isTTY === true);
  if (pretty) {
    // Loaded only for a terminal; synchronous, so the last lines of a failed start are written before exit.
    const { default: prettyStream } = await import('pino-pretty');
    return pino(options, prettyStream({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', destination: settings.destination ?? 1 }));
  }
  return pino(options, settings.destination ?? pino.destination({ dest: 1, sync: true }));
}

/**
 * The logger for start-up lines (what the service uses, progress, the operator token, `listening on`):
 * written at info whatever LOG_LEVEL says (the operator token is shown only once), more when it says more.
 */
export function startupLogger(log: Logger): Logger {
  return log.isLevelEnabled('info') ? log : log.child({}, { level: 'info' });
}
