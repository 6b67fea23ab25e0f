// Runs the real `latchkey` bin (packages/cli/bin/latchkey.js) as a child process, as a person or a script would,
// against the test's Latchkey. The child never inherits LATCHKEY_* or ADMIN_TOKEN from the machine, nor its
// saved profiles: XDG_CONFIG_HOME is an empty directory of the test run unless a test passes its own.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.ts';

export const BIN = path.resolve('packages/cli/bin/latchkey.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

let emptyConfigHome: string | undefined;

/** A config directory with no latchkey profiles, made once per test process. */
export function noProfiles(): string {
  emptyConfigHome ??= mkdtempSync(path.join(os.tmpdir(), 'latchkey-cli-config-'));
  return emptyConfigHome;
}

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('LATCHKEY_') && name !== 'ADMIN_TOKEN'));
  return { ...inherited, XDG_CONFIG_HOME: noProfiles(), ...env };
}

/** Starts the bin; the caller reads its streams and waits for it (a long-running command). */
export function startCli(args: string[], env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [BIN, ...args], { env: childEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Collects what a started bin prints, and its exit code once it ends. */
export function outcome(child: ChildProcessWithoutNullStreams): { result: Promise<CliResult>; output: () => string } {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const result = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { result, output: () => stdout + stderr };
}

/** Runs the bin to its end (stdin closed at once). */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const child = startCli(args, env);
  child.stdin.end();
  return outcome(child).result;
}

/** A runner with the service's URL and the operator token in the environment, and optionally an API key. */
export function cliFor(service: TestService) {
  const env = { LATCHKEY_URL: service.url, LATCHKEY_ADMIN_TOKEN: ADMIN_TOKEN };
  return {
    env,
    run: (args: string[], extra: Record<string, string> = {}) => runCli(args, { ...env, ...extra }),
    /** Runs with --json, asserts exit 0 and parses stdout. */
    json: async <T = Record<string, unknown>>(args: string[], extra: Record<string, string> = {}): Promise<T> => {
      const result = await runCli(['--json', ...args], { ...env, ...extra });
      if (result.code !== 0) throw new Error(`latchkey ${args.join(' ')} exited ${result.code}\n${result.stdout}${result.stderr}`);
      return JSON.parse(result.stdout) as T;
    },
  };
}
