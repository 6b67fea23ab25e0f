// latchkey: the command line of a Latchkey service. main() parses the arguments, runs one command and answers
// the exit code (README: CLI); bin/latchkey.js calls it.
import { Command, CommanderError } from 'commander';
import packageJson from '../package.json' with { type: 'json' };
import { registerAdmin } from './commands/admin.ts';
import { registerEvents } from './commands/events.ts';
import { registerGateway } from './commands/gateway.ts';
import { registerKeys } from './commands/keys.ts';
import { registerLocks } from './commands/locks.ts';
import { registerPeople } from './commands/people.ts';
import { registerProfiles } from './commands/profiles.ts';
import { registerSandbox } from './commands/sandbox.ts';
import { registerWebhooks } from './commands/webhooks.ts';
import { DEFAULT_URL, nonEmpty, processIo, type GlobalFlags, type Io } from './context.ts';
import { describeFailure, EXIT } from './failures.ts';
import { loadProfile } from './profiles.ts';

const EXIT_CODES_HELP = `
Settings: flags, else LATCHKEY_URL, LATCHKEY_API_KEY (public API), LATCHKEY_ADMIN_TOKEN or ADMIN_TOKEN
(admin and sandbox commands), else the saved profile (latchkey login; --profile or LATCHKEY_PROFILE
picks one). Secrets are never printed, except the token, password or signing secret that a create
answers once.

Exit codes: 0 ok, 1 the API refused the request (4xx), 2 usage error, 3 service unreachable, 5xx or
429, 4 unlock failed or timed out.`;

export function buildProgram(io: Io): Command {
  const program = new Command('latchkey')
    .description('The command line of a Latchkey service: provisioning, the public API, the sandbox and a simulated gateway.')
    .version(packageJson.version)
    .option('--url <url>', `the service's root URL (LATCHKEY_URL; default ${DEFAULT_URL})`)
    .option('--api-key <token>', 'API key for the public API (LATCHKEY_API_KEY)')
    .option('--admin-token <token>', 'operator token for admin and sandbox commands (LATCHKEY_ADMIN_TOKEN, or ADMIN_TOKEN)')
    .option('--profile <name>', 'the saved profile to use (LATCHKEY_PROFILE; default: the one `latchkey profile use` chose)')
    .option('--json', 'print JSON (lists: the page envelope) for scripts')
    .addHelpText('after', EXIT_CODES_HELP)
    // Inherited by every command added below: help lists the global flags, and no command calls
    // process.exit; main() prints every failure itself and picks the exit code.
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .configureOutput({ writeOut: (text) => io.out(text.trimEnd()), writeErr: (text) => io.err(text.trimEnd()), outputError: () => {} })
    .exitOverride();

  registerAdmin(program, io);
  registerSandbox(program, io);
  registerLocks(program, io);
  registerPeople(program, io);
  registerKeys(program, io);
  registerEvents(program, io);
  registerWebhooks(program, io);
  registerGateway(program, io);
  registerProfiles(program, io);
  return program;
}

export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return EXIT.ok; // --help, --version
      if (error.code === 'commander.help') return EXIT.usage; // a group without its subcommand: its help was printed
    }
    const flags = program.opts<GlobalFlags>();
    const failure = describeFailure(error, nonEmpty(flags.url) ?? nonEmpty(io.env.LATCHKEY_URL) ?? savedUrl(flags, io) ?? DEFAULT_URL);
    if (flags.json) io.err(JSON.stringify(failure.json));
    else for (const line of failure.lines) io.err(line);
    if (error instanceof CommanderError && !flags.json) io.err('(add --help for usage)');
    return failure.code;
  }
}

/** The saved profile's URL, for naming an unreachable service; nothing when the profile cannot be read. */
function savedUrl(flags: GlobalFlags, io: Io): string | undefined {
  try {
    return loadProfile(flags.profile, io.env)?.url;
  } catch {
    return undefined;
  }
}
