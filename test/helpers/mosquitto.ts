// A Mosquitto of a test's own (not the machine's broker on 1883): the shipped configuration
// (deploy/mosquitto/mosquitto.conf) with its own port and paths, so that restarting or reconfiguring it
// disturbs no other test. With `dynsec`, the dynamic-security plugin enforces accounts; without, anyone
// may connect. Tests skip cleanly where mosquitto is not installed.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

function findExecutable(name: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  for (const dir of dirs) if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  return null;
}

const SHIPPED_CONFIG = readFileSync('deploy/mosquitto/mosquitto.conf', 'utf8');
const mosquittoBinary = findExecutable('mosquitto');
const mosquittoCtrl = findExecutable('mosquitto_ctrl');

export function mosquittoAvailable(): boolean {
  return mosquittoBinary !== null;
}

/** The plugin where the shipped configuration says, or where other distributions put it. */
function dynsecPlugin(): string {
  const shipped = /^plugin\s+(\S+)/m.exec(SHIPPED_CONFIG)?.[1];
  const candidates = [shipped, '/usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so', '/usr/lib/aarch64-linux-gnu/mosquitto_dynamic_security.so',
    '/usr/lib/mosquitto_dynamic_security.so', '/usr/local/lib/mosquitto_dynamic_security.so'];
  const found = candidates.find((candidate) => candidate && existsSync(candidate));
  if (!found) throw new Error('mosquitto is installed but its dynamic-security plugin was not found');
  return found;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

export interface TestBroker {
  url: string;
  /** The dynamic-security admin, with `dynsec`. */
  admin: { username: string; password: string } | null;
  process: () => ChildProcess;
  output: () => string;
  /** Stops the broker (SIGTERM) and waits for it; start() brings it back on the same port. */
  pause(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

/**
 * `persistence`: the shipped persistence (sessions, subscriptions, queued and retained messages saved at a
 * graceful stop and read back at start) in the broker's own directory; without it a restart forgets all.
 */
export async function startMosquitto(options: { dynsec?: boolean; persistence?: boolean } = {}): Promise<TestBroker> {
  if (!mosquittoBinary) throw new Error('mosquitto is not installed');
  const dir = await mkdtemp(path.join(tmpdir(), 'latchkey-mosquitto-'));
  let admin: TestBroker['admin'] = null;
  const dynsecLines: string[] = ['allow_anonymous true'];
  if (options.dynsec) {
    admin = { username: 'dynsec-admin', password: `admin-${process.pid}-${Date.now()}` };
    const dynsecFile = path.join(dir, 'dynamic-security.json');
    await promisify(execFile)(mosquittoCtrl ?? 'mosquitto_ctrl', ['dynsec', 'init', dynsecFile, admin.username, admin.password]);
    dynsecLines.splice(0, 1, 'allow_anonymous false', `plugin ${dynsecPlugin()}`, `plugin_opt_config_file ${dynsecFile}`);
  }
  const port = await freePort();
  const replaced = /^(plugin|plugin_opt_config_file|persistence|persistence_location|user|log_dest|allow_anonymous)\b/;
  const config = [
    // The listener stays where it is: the listener settings that follow it apply to it.
    ...SHIPPED_CONFIG.split('\n')
      .filter((line) => !replaced.test(line.trim()))
      .map((line) => (/^listener\b/.test(line.trim()) ? `listener ${port} 127.0.0.1` : line)),
    ...dynsecLines,
    ...(options.persistence ? ['persistence true', `persistence_location ${dir}/`] : ['persistence false']),
    // As whoever runs the tests: started as root, Mosquitto would switch to a user that cannot read the temp dir.
    `user ${userInfo().username}`,
    'log_dest stderr',
  ].join('\n');
  const configFile = path.join(dir, 'mosquitto.conf');
  await writeFile(configFile, `${config}\n`);

  let child: ChildProcess | null = null;
  let output = '';
  // A test run that ends early (the runner's time-out stops it with a signal) must not leave the broker behind.
  const killOnExit = () => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  const killOnSignal = (signal: NodeJS.Signals) => {
    killOnExit();
    process.kill(process.pid, signal); // once() has removed this handler: the signal now ends the process
  };
  process.once('exit', killOnExit);
  process.once('SIGTERM', killOnSignal);
  process.once('SIGINT', killOnSignal);

  const start = async () => {
    const proc = spawn(mosquittoBinary, ['-c', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    for (let i = 0; i < 200; i++) {
      if (proc.exitCode !== null) throw new Error(`mosquitto exited:\n${output}`);
      if (await portOpen(port)) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`mosquitto did not listen on ${port}:\n${output}`);
  };
  const pause = async () => {
    const proc = child;
    child = null;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    await exited;
  };
  await start();
  let stopped = false;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    admin,
    process: () => {
      if (!child) throw new Error('mosquitto is not running');
      return child;
    },
    output: () => output,
    pause,
    start,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.off('exit', killOnExit);
      process.off('SIGTERM', killOnSignal);
      process.off('SIGINT', killOnSignal);
      await pause();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
