// The reference gateway (packages/cli's simulator) in this process, fed commands as typed lines: what the
// console's browser tests drive to make door activity.
import { PassThrough } from 'node:stream';
import { simulateGateway } from '../../packages/cli/src/gateway-simulator.ts';
import { waitFor, within } from './gateways.ts';

export interface SimulatedGateway {
  /** Types a command line (`grant 3 7`, `close 3`, …). */
  type(line: string): void;
  log: string[];
  /** Says `quit` and waits for it to go (offline through the broker). */
  stop(): Promise<void>;
}

/**
 * Connects and waits until it says it is online. `answer`: how unlock commands are answered; `now`: the
 * gateway's clock (a sandbox's moved clock, say), the wall clock by default.
 */
export async function runSimulatedGateway(
  gateway: { url: string; id: number | string; password: string; prefix: string },
  answer: 'ok' | 'error' | 'none' = 'ok',
  now?: () => Date,
): Promise<SimulatedGateway> {
  const input = new PassThrough();
  const log: string[] = [];
  const done = simulateGateway({
    url: gateway.url.replace('localhost', '127.0.0.1'),
    id: String(gateway.id),
    password: gateway.password,
    prefix: gateway.prefix,
    answer,
    error: 'device_error',
    locks: [],
    key: null,
    randomPerMinute: 0,
    input,
    log: (line) => log.push(line),
    ...(now ? { now } : {}),
  });
  const stop = async () => {
    input.write('quit\n');
    await within(done, 5000, 'the simulated gateway stops').catch(() => undefined);
  };
  await waitFor(() => log.some((line) => line.includes('online at')), 'the simulated gateway is online').catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { type: (line) => input.write(`${line}\n`), log, stop };
}
