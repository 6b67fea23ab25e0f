// The settings of one run (flags first, then the environment, then the saved profile) and what commands build
// from them: the SDK client for the public API, the operator API client, and where output goes.
import type { Command } from 'commander';
import { Latchkey } from '@latchkey/sdk';
import { AdminClient } from './admin-client.ts';
import { UsageError } from './failures.ts';
import { json } from './output.ts';
import { loadProfile, type Env, type Profile } from './profiles.ts';

export type { Env } from './profiles.ts';

export const DEFAULT_URL = 'http://localhost:8080';

/** The global flags, as commander reads them. */
export interface GlobalFlags {
  url?: string;
  apiKey?: string;
  adminToken?: string;
  profile?: string;
  json?: boolean;
}

export interface Settings {
  /** The service's root URL, without a trailing slash or `/v1`. */
  url: string;
  apiKey: string | undefined;
  adminToken: string | undefined;
  json: boolean;
}

/**
 * Flags win over the environment, which wins over the saved profile (--profile, LATCHKEY_PROFILE or the config
 * file's default; README: CLI, "Profiles"). The operator token is LATCHKEY_ADMIN_TOKEN, or the service's own
 * ADMIN_TOKEN when only that is set (the shell that starts the service). Secrets are never printed.
 */
export function resolveSettings(flags: GlobalFlags, env: Env, profile: Profile | undefined): Settings {
  const url = (flags.url ?? nonEmpty(env.LATCHKEY_URL) ?? nonEmpty(profile?.url) ?? DEFAULT_URL).replace(/\/+$/, '').replace(/\/v1$/, '');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url / LATCHKEY_URL is not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--url / LATCHKEY_URL must be http:// or https://: ${url}`);
  return {
    url,
    apiKey: nonEmpty(flags.apiKey) ?? nonEmpty(env.LATCHKEY_API_KEY) ?? nonEmpty(profile?.api_key),
    adminToken: nonEmpty(flags.adminToken) ?? nonEmpty(env.LATCHKEY_ADMIN_TOKEN) ?? nonEmpty(env.ADMIN_TOKEN) ?? nonEmpty(profile?.admin_token),
    json: flags.json === true,
  };
}

export function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
  env: Env;
}

export const processIo: Io = {
  out: (text) => void process.stdout.write(`${text}\n`),
  err: (text) => void process.stderr.write(`${text}\n`),
  env: process.env,
};

export class Context {
  private sdkClient: Latchkey | undefined;
  private adminClient: AdminClient | undefined;

  constructor(
    readonly settings: Settings,
    readonly io: Io,
  ) {}

  get json(): boolean {
    return this.settings.json;
  }

  /** The public API client; a usage error when no API key is set. */
  sdk(): Latchkey {
    if (!this.settings.apiKey) throw new UsageError('no API key: set LATCHKEY_API_KEY, pass --api-key or save one with latchkey login.');
    // Fewer and shorter retries than the SDK's defaults: a person at a terminal would rather see the 429.
    this.sdkClient ??= new Latchkey({ apiKey: this.settings.apiKey, baseUrl: this.settings.url, retries: 2, maxRetryWaitMs: 10_000 });
    return this.sdkClient;
  }

  /** The operator API client; a usage error when no operator token is set. */
  admin(): AdminClient {
    if (!this.settings.adminToken) throw new UsageError('no operator token: set LATCHKEY_ADMIN_TOKEN, pass --admin-token or save one with latchkey login.');
    this.adminClient ??= new AdminClient(this.settings.url, this.settings.adminToken);
    return this.adminClient;
  }

  /** Prints `value` as JSON with --json, otherwise what `human` makes of it. */
  print<T>(value: T, human: (value: T) => string): void {
    this.io.out(this.json ? json(value) : human(value));
  }

  /** A remark for people (hints, "shown once"): stderr, so that stdout stays the data. */
  note(text: string): void {
    this.io.err(text);
  }
}

/** The context of the command being run: its global flags read through the command's ancestors, and its profile. */
export function contextOf(command: Command, io: Io, withProfile = true): Context {
  const flags = command.optsWithGlobals<GlobalFlags>();
  return new Context(resolveSettings(flags, io.env, withProfile ? loadProfile(flags.profile, io.env) : undefined), io);
}
