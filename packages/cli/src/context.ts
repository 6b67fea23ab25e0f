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
  /**
   * The saved profile whose secrets were left out because it is another service's (`url` named another by
   * --url or LATCHKEY_URL): said when a command then lacks a secret.
   */
  elsewhere?: { profile: string; url: string };
}

/** A service URL as given (a trailing slash, `/v1`), not yet checked. */
function trimmedUrl(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/**
 * Whether two URLs name one service: the same origin (scheme, host, port, as URL normalises them: case, the
 * default port) and the same path, once a trailing slash and `/v1` are dropped. Unparsable: not the same.
 */
export function sameService(a: string, b: string): boolean {
  try {
    const [x, y] = [new URL(trimmedUrl(a)), new URL(trimmedUrl(b))];
    return x.origin !== 'null' && x.origin === y.origin && x.pathname.replace(/\/+$/, '') === y.pathname.replace(/\/+$/, '');
  } catch {
    return false;
  }
}

/**
 * Flags win over the environment, which wins over the saved profile (--profile, LATCHKEY_PROFILE or the config
 * file's default; README: CLI, "Profiles"). The operator token is LATCHKEY_ADMIN_TOKEN, or the service's own
 * ADMIN_TOKEN when only that is set (the shell that starts the service). Secrets are never printed.
 * A profile's secrets go to its own service only: with --url or LATCHKEY_URL naming another, only the secrets
 * given on this call are used (a login drops another service's secrets for the same reason).
 */
export function resolveSettings(flags: GlobalFlags, env: Env, profile: (Profile & { name?: string }) | undefined): Settings {
  const url = trimmedUrl(flags.url ?? nonEmpty(env.LATCHKEY_URL) ?? nonEmpty(profile?.url) ?? DEFAULT_URL);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url / LATCHKEY_URL is not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--url / LATCHKEY_URL must be http:// or https://: ${url}`);
  const own = profile !== undefined && sameService(url, profile.url);
  const saved = own ? profile : undefined;
  const settings: Settings = {
    url,
    apiKey: nonEmpty(flags.apiKey) ?? nonEmpty(env.LATCHKEY_API_KEY) ?? nonEmpty(saved?.api_key),
    adminToken: nonEmpty(flags.adminToken) ?? nonEmpty(env.LATCHKEY_ADMIN_TOKEN) ?? nonEmpty(env.ADMIN_TOKEN) ?? nonEmpty(saved?.admin_token),
    json: flags.json === true,
  };
  if (profile && !own && (nonEmpty(profile.api_key) || nonEmpty(profile.admin_token))) {
    settings.elsewhere = { profile: profile.name ?? 'saved', url: profile.url };
  }
  return settings;
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

  /** The API key for the public API; a usage error when none is set for this service. */
  apiKey(): string {
    if (!this.settings.apiKey) throw new UsageError(this.missing('no API key', '--api-key', 'LATCHKEY_API_KEY'));
    return this.settings.apiKey;
  }

  /** The public API client; a usage error when no API key is set. */
  sdk(): Latchkey {
    // Fewer and shorter retries than the SDK's defaults: a person at a terminal would rather see the 429.
    this.sdkClient ??= new Latchkey({ apiKey: this.apiKey(), baseUrl: this.settings.url, retries: 2, maxRetryWaitMs: 10_000 });
    return this.sdkClient;
  }

  /** The operator API client; a usage error when no operator token is set. */
  admin(): AdminClient {
    if (!this.settings.adminToken) throw new UsageError(this.missing('no operator token', '--admin-token', 'LATCHKEY_ADMIN_TOKEN'));
    this.adminClient ??= new AdminClient(this.settings.url, this.settings.adminToken);
    return this.adminClient;
  }

  /** Why a secret is missing, and how to give one; names the profile whose secrets are another service's. */
  private missing(what: string, flag: string, variable: string): string {
    const { elsewhere, url } = this.settings;
    if (!elsewhere) return `${what}: set ${variable}, pass ${flag} or save one with latchkey login.`;
    return (
      `${what} for ${url}: the saved credentials (profile "${elsewhere.profile}") belong to another service, ${elsewhere.url}, ` +
      `and are sent only there. Pass ${flag} or set ${variable} for ${url}, or save a profile for it: latchkey login --profile NAME --url ${url}.`
    );
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
