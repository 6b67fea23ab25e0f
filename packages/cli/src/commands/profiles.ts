// latchkey login | logout | profile list|use|remove: saved logins (src/profiles.ts). Secrets go into the config
// file and nowhere else: no command here prints one.
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import type { Command } from 'commander';
import { AdminClient } from '../admin-client.ts';
import { DEFAULT_URL, nonEmpty, resolveSettings, sameService, type GlobalFlags, type Io } from '../context.ts';
import { UsageError } from '../failures.ts';
import { profileAction } from '../kit.ts';
import { table } from '../output.ts';
import { configPath, DEFAULT_PROFILE, readConfig, selectedProfile, validProfileName, writeConfig, type ConfigFile, type Profile } from '../profiles.ts';

interface ProfileRow {
  name: string;
  url: string;
  has_api_key: boolean;
  has_admin_token: boolean;
  default: boolean;
}

function rows(config: ConfigFile): ProfileRow[] {
  return Object.entries(config.profiles).map(([name, profile]) => ({
    name,
    url: profile.url,
    has_api_key: Boolean(profile.api_key),
    has_admin_token: Boolean(profile.admin_token),
    // The profile a run without --profile uses: "default" when the file names none (its default was logged out).
    default: (config.default_profile ?? DEFAULT_PROFILE) === name,
  }));
}

/** The profile named by --profile / LATCHKEY_PROFILE, else the file's default, else "default". */
function targetName(command: Command, io: Io, config: ConfigFile): string {
  return validProfileName(selectedProfile(command.optsWithGlobals<GlobalFlags>().profile, io.env, config).name);
}

export function registerProfiles(program: Command, io: Io): void {
  program
    .command('login')
    .description(
      'save the service URL and credentials as a profile (--profile NAME, default "default"): the values of --url, --api-key and --admin-token (or LATCHKEY_URL, LATCHKEY_API_KEY, LATCHKEY_ADMIN_TOKEN), asked for on a terminal when neither secret is given',
    )
    .option('--no-verify', 'save without checking the operator token against the service')
    .action(
      profileAction<{ verify: boolean }>(io, async (ctx, o, _args, command) => {
        const flags = command.optsWithGlobals<GlobalFlags>();
        const file = configPath(io.env);
        const config = readConfig(file);
        const name = targetName(command, io, config);
        const existing = config.profiles[name];
        // What was given on this call (flags, then the environment); the saved profile itself is not a source.
        const given = resolveSettings({ ...flags, profile: undefined }, io.env, undefined);
        const url = nonEmpty(flags.url) ?? nonEmpty(io.env.LATCHKEY_URL) ?? existing?.url ?? DEFAULT_URL;
        let apiKey = given.apiKey;
        let adminToken = given.adminToken;
        if (apiKey === undefined && adminToken === undefined) {
          if (!process.stdin.isTTY) {
            throw new UsageError('give --api-key and/or --admin-token (or LATCHKEY_API_KEY / LATCHKEY_ADMIN_TOKEN) to save.');
          }
          apiKey = nonEmpty(await askHidden('API key (Enter for none): '));
          adminToken = nonEmpty(await askHidden('Operator token (Enter for none): '));
          if (apiKey === undefined && adminToken === undefined) throw new UsageError('nothing to save: no API key and no operator token.');
        }
        const normalized = resolveSettings({ url }, {}, undefined).url;
        if (adminToken !== undefined && o.verify) await new AdminClient(normalized, adminToken).get<unknown>('/overview');
        // A login to the same service keeps the secret it was not given; another service's secrets are dropped.
        const kept = existing && sameService(existing.url, normalized) ? existing : undefined;
        const profile: Profile = { url: normalized };
        const savedKey = apiKey ?? kept?.api_key;
        const savedToken = adminToken ?? kept?.admin_token;
        if (savedKey) profile.api_key = savedKey;
        if (savedToken) profile.admin_token = savedToken;
        config.profiles[name] = profile;
        config.default_profile ??= name;
        writeConfig(file, config);
        const row = rows(config).find((r) => r.name === name) as ProfileRow;
        ctx.print({ ...row, file }, () => `Saved profile "${name}" for ${normalized} (${credentials(row)}) in ${file}.`);
      }),
    );

  program
    .command('logout')
    .description('delete a saved profile and its secrets (--profile NAME, else LATCHKEY_PROFILE, else the default profile)')
    .action(
      profileAction(io, async (ctx, _o, _args, command) => {
        removeProfile(ctx.print.bind(ctx), io, targetName(command, io, readConfig(configPath(io.env))));
      }),
    );

  const profile = program.command('profile').description(`saved logins (${configPath(io.env).replace(io.env.HOME ?? '\0', '~')}): list, use, remove`);
  profile
    .command('list')
    .description('saved profiles: names, URLs and which credentials each holds, never the secrets')
    .action(
      profileAction(io, async (ctx) => {
        const config = readConfig(configPath(io.env));
        ctx.print({ data: rows(config) }, ({ data }) =>
          data.length === 0
            ? 'No profiles: save one with latchkey login --url … --admin-token … (or --api-key …).'
            : table(data, [
                ['', (r) => (r.default ? '*' : '')],
                ['name', (r) => r.name],
                ['url', (r) => r.url],
                ['credentials', (r) => credentials(r)],
              ]),
        );
      }),
    );
  profile
    .command('use')
    .description('make a profile the default (used when neither --profile nor LATCHKEY_PROFILE names one)')
    .argument('<name>', 'profile name')
    .action(
      profileAction(io, async (ctx, _o, [name]) => {
        const file = configPath(io.env);
        const config = readConfig(file);
        if (!config.profiles[name as string]) throw new UsageError(`no profile "${String(name)}" in ${file}.`);
        config.default_profile = name as string;
        writeConfig(file, config);
        ctx.print({ default_profile: name }, () => `Default profile: ${String(name)}.`);
      }),
    );
  profile
    .command('remove')
    .description('delete a saved profile and its secrets (like logout)')
    .argument('<name>', 'profile name')
    .action(profileAction(io, async (ctx, _o, [name]) => removeProfile(ctx.print.bind(ctx), io, name as string)));
}

function removeProfile(print: (value: unknown, human: (value: unknown) => string) => void, io: Io, name: string): void {
  const file = configPath(io.env);
  const config = readConfig(file);
  if (!config.profiles[name]) throw new UsageError(`no profile "${name}" in ${file}.`);
  delete config.profiles[name];
  if (config.default_profile === name) delete config.default_profile;
  writeConfig(file, config);
  print({ name, removed: true }, () => `Removed profile "${name}".`);
}

function credentials(row: ProfileRow): string {
  const held = [row.has_api_key ? 'API key' : null, row.has_admin_token ? 'operator token' : null].filter((item) => item !== null);
  return held.length === 0 ? '-' : held.join(', ');
}

/** A line read from the terminal without echoing it. */
function askHidden(question: string): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (!muted) process.stderr.write(chunk);
      callback();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  return new Promise((resolve) => {
    rl.question(question, (answer) => {
      rl.close();
      process.stderr.write('\n');
      resolve(answer);
    });
    muted = true;
  });
}
