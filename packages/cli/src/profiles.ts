// Saved logins: named profiles of a service URL and its secrets (an API key, an operator token) in
// $XDG_CONFIG_HOME/latchkey/config.json, else ~/.config/latchkey/config.json. The file holds secrets: it is
// written 0600 (its directory 0700), and one that other users can read is refused, as ssh refuses a key file.
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from './failures.ts';

export type Env = Record<string, string | undefined>;

export interface Profile {
  url: string;
  api_key?: string;
  admin_token?: string;
}

export interface ConfigFile {
  /** The profile used when neither --profile nor LATCHKEY_PROFILE names one. */
  default_profile?: string;
  profiles: Record<string, Profile>;
}

/** The profile a login writes when none is named. */
export const DEFAULT_PROFILE = 'default';

export function configPath(env: Env): string {
  const xdg = env.XDG_CONFIG_HOME?.trim();
  // XDG: a relative XDG_CONFIG_HOME is invalid and ignored.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME?.trim() || os.homedir(), '.config');
  return path.join(base, 'latchkey', 'config.json');
}

/** The config file, or an empty one when there is none. A file other users can read or write is refused. */
export function readConfig(file: string): ConfigFile {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw error;
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    throw new UsageError(
      `${file} holds secrets but other users can access it (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); not using it. Fix: chmod 600 ${file}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new UsageError(`${file} is not valid JSON (${(error as Error).message}); fix or delete it, then run latchkey login again.`);
  }
  const config = parsed as Partial<ConfigFile> | null;
  if (config === null || typeof config !== 'object' || (config.profiles !== undefined && typeof config.profiles !== 'object')) {
    throw new UsageError(`${file} is not a latchkey config (expected { "profiles": { … } }).`);
  }
  return { ...config, profiles: config.profiles ?? {} };
}

/** Writes the file 0600 in a 0700 directory, through a temporary file renamed into place. */
export function writeConfig(file: string, config: ConfigFile): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, file);
  } finally {
    rmSync(temp, { force: true });
  }
}

export interface Selected {
  name: string;
  /** Named by --profile or LATCHKEY_PROFILE (not the file's default). */
  explicit: boolean;
}

/** Which profile a run uses: --profile, else LATCHKEY_PROFILE, else the file's default_profile, else "default". */
export function selectedProfile(flag: string | undefined, env: Env, config: ConfigFile): Selected {
  const named = flag?.trim() || env.LATCHKEY_PROFILE?.trim();
  if (named) return { name: named, explicit: true };
  return { name: config.default_profile ?? DEFAULT_PROFILE, explicit: false };
}

/**
 * The profile a command reads its settings from: none when there is no config file and none was named. A
 * profile named by --profile or LATCHKEY_PROFILE that does not exist is a usage error.
 */
export function loadProfile(flag: string | undefined, env: Env): (Profile & { name: string }) | undefined {
  const file = configPath(env);
  const config = readConfig(file);
  const selected = selectedProfile(flag, env, config);
  const profile = config.profiles[selected.name];
  if (!profile && selected.explicit) {
    const names = Object.keys(config.profiles);
    throw new UsageError(
      `no profile "${selected.name}" in ${file} (${names.length > 0 ? `profiles: ${names.join(', ')}` : 'no profiles yet'}); add it with: latchkey login --profile ${selected.name} --url …`,
    );
  }
  return profile && { ...profile, name: selected.name };
}

export function validProfileName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) throw new UsageError(`profile names are letters, digits, . _ - (at most 64): ${name}`);
  return name;
}
