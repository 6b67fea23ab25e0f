// How the CLI fails: one exit code per kind of failure, so scripts can tell them apart (README: CLI, "Exit
// codes"), and one way of printing each.
import { CommanderError } from 'commander';
import { LatchkeyError } from '@latchkey/sdk';

export const EXIT = {
  ok: 0,
  /** The API refused the request (4xx other than 429): repeating it unchanged will not help. */
  refused: 1,
  /** Bad flags or arguments, or a setting missing (API key, admin token). */
  usage: 2,
  /** The service could not be reached, failed (5xx) or kept answering 429: retrying later may help. */
  unavailable: 3,
  /** An unlock that did not open: `failed`, `timed_out`, 502 publish_failed, or the wait ran out. */
  unlockFailed: 4,
} as const;

/** A mistake in how the CLI was called, found before anything was sent. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** An unlock command that ended without opening the door (or whose end was not seen in time). */
export class UnlockFailed extends Error {
  override readonly name = 'UnlockFailed';
}

export interface Failure {
  code: number;
  /** Lines for stderr (human form). */
  lines: string[];
  /** The JSON printed on stderr with --json. */
  json: unknown;
}

/** The exit code and the message of anything a command threw. */
export function describeFailure(error: unknown, serviceUrl: string): Failure {
  if (error instanceof LatchkeyError) return apiFailure(error);
  if (error instanceof UsageError) return simple(EXIT.usage, 'usage_error', error.message);
  if (error instanceof UnlockFailed) return simple(EXIT.unlockFailed, 'unlock_failed', error.message);
  if (error instanceof CommanderError) return simple(EXIT.usage, 'usage_error', error.message.replace(/^error: /, ''));
  if (error instanceof DOMException && error.name === 'TimeoutError') return simple(EXIT.unlockFailed, 'unlock_failed', error.message);
  if (isNetworkError(error)) {
    const cause = error.cause instanceof Error ? `: ${(error.cause as NodeJS.ErrnoException).code ?? error.cause.message}` : '';
    return simple(EXIT.unavailable, 'unreachable', `cannot reach ${serviceUrl}${cause}`);
  }
  const message = error instanceof Error ? error.message : String(error);
  return simple(EXIT.refused, 'cli_error', message);
}

function apiFailure(error: LatchkeyError): Failure {
  // 502 publish_failed only comes from an unlock: the door was not opened.
  const code =
    error.code === 'publish_failed' ? EXIT.unlockFailed : error.status >= 500 || error.status === 429 ? EXIT.unavailable : EXIT.refused;
  const lines = [`error: ${error.message} (${error.code}, HTTP ${error.status})`];
  for (const detail of error.details) lines.push(`  ${detail.field}: ${detail.message} (${detail.code})`);
  if (error.retryAfter !== null) lines.push(`retry after ${error.retryAfter} s`);
  if (error.requestId) lines.push(`request id: ${error.requestId}`);
  const json = {
    error: {
      status: error.status,
      code: error.code,
      message: error.message,
      ...(error.details.length > 0 ? { details: error.details } : {}),
      request_id: error.requestId,
    },
  };
  return { code, lines, json };
}

function simple(code: number, kind: string, message: string): Failure {
  return { code, lines: [`error: ${message}`], json: { error: { code: kind, message } } };
}

/** fetch's failure to connect (undici: a TypeError "fetch failed" whose cause is the socket error). */
function isNetworkError(error: unknown): error is TypeError {
  return error instanceof TypeError && error.message === 'fetch failed';
}
