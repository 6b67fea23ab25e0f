// latchkey gateway simulate: a gateway on the service's MQTT broker, for trying unlocks and door activity by
// hand (README: "Trying it with a simulated gateway").
import { Option, type Command } from 'commander';
import type { Io } from '../context.ts';
import { UsageError } from '../failures.ts';
import { STDIN_HELP } from '../gateway-help.ts';
import { action } from '../kit.ts';
import { integerList, positiveInteger, wholeNumber } from '../parse.ts';
import type { SimulatorOptions } from '../gateway-simulator.ts';

interface SimulateFlags {
  id: number;
  password?: string;
  mqttUrl: string;
  prefix: string;
  answer: 'ok' | 'error' | 'none';
  error: string;
  locks: number[];
  key?: number;
  random: number;
  data?: string;
  offline?: boolean;
}

export function registerGateway(program: Command, io: Io): void {
  program
    .command('gateway')
    .description('a simulated gateway')
    .command('simulate')
    .description(`connect as a gateway: decide at the door from its copy of the access list, ask about unknown credentials, answer unlock commands, until Ctrl-C. ${STDIN_HELP}`)
    .requiredOption('--id <id>', 'gateway id (from `latchkey admin gateways create`)', positiveInteger)
    .option('--password <password>', 'its MQTT password (or LATCHKEY_GATEWAY_PASSWORD)')
    .option('--mqtt-url <url>', "the broker: the gateway's mqtt.url", 'mqtt://localhost:1884')
    .option('--prefix <prefix>', 'topic prefix', 'latchkey/v1')
    .addOption(new Option('--answer <answer>', 'how unlock commands are answered').choices(['ok', 'error', 'none']).default('ok'))
    .addOption(new Option('--error <code>', 'the error of --answer error').choices(['device_error', 'device_missing']).default('device_error'))
    .option('--locks <ids>', 'lock ids for random door activity, comma-separated', integerList, [])
    .option('--key <id>', 'the key id random activity uses', positiveInteger)
    .option('--random <n>', 'random door events a minute', wholeNumber, 0)
    .option('--data <file>', 'where the access list is kept between runs (default: data/gateway-<id>-access.json)')
    .option('--offline', 'start with the link cut: decide from the copy only')
    .hook('preAction', (command) => {
      // `npm run gateway -- --url mqtt://…` was the broker once; here --url is the service's (a global flag).
      const url = command.optsWithGlobals<{ url?: string }>().url;
      if (url && /^mqtts?:\/\//.test(url)) throw new UsageError(`--url is the service's URL; give the broker with --mqtt-url ${url}`);
    })
    .action(
      action<SimulateFlags>(io, async (ctx, o) => {
        const password = o.password ?? ctx.io.env.LATCHKEY_GATEWAY_PASSWORD;
        if (!password) throw new UsageError('no gateway password: pass --password or set LATCHKEY_GATEWAY_PASSWORD.');
        // Loaded here, not with the CLI: only this command needs the simulator and the decision code.
        const { simulateGateway } = await import('../gateway-simulator.ts');
        await runSimulator(simulateGateway, {
          url: o.mqttUrl,
          id: String(o.id),
          password,
          prefix: o.prefix,
          answer: o.answer,
          error: o.error,
          locks: o.locks,
          key: o.key ?? null,
          randomPerMinute: o.random,
          input: process.stdin,
          dataFile: o.data ?? `data/gateway-${o.id}-access.json`,
          offline: o.offline ?? false,
          log: (line, record) => ctx.io.out(ctx.json ? JSON.stringify(record) : line),
        });
      }),
    );
}

/** The broker refused the gateway's credentials (MQTT 3.1.1 return codes 4, 5; MQTT 5 reason codes 134, 135). */
const REFUSED = /not authori[sz]ed|bad user ?name or password/i;

/** Nothing answered at the broker's address (another port, another host, the service not started). */
const UNREACHABLE = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT/;

/** A gateway that cannot connect is one line naming what to check, never the password or a stack trace. */
export class GatewayRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GatewayRefused';
  }
}

async function runSimulator(simulate: (options: SimulatorOptions) => Promise<void>, options: SimulatorOptions): Promise<void> {
  try {
    await simulate(options);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = REFUSED.test(message)
      ? ': check --id and the password (--password or LATCHKEY_GATEWAY_PASSWORD)'
      : UNREACHABLE.test(message)
        ? ": is the service's broker there? pass --mqtt-url (the gateway's mqtt.url in the operator API)"
        : '';
    throw new GatewayRefused(`gateway ${options.id} could not connect to ${options.url} (${message})${hint}`.split(options.password).join('[redacted]'));
  }
}
