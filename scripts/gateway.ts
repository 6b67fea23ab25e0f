// npm run gateway -- --id <gateway id> --password <password> [options]
// The gateway simulator (packages/cli/src/gateway-simulator.ts) with the flags it always had here; the CLI
// runs the same simulator as `latchkey gateway simulate`.
import { parseArgs } from 'node:util';
import { simulateGateway, STDIN_HELP } from '../packages/cli/src/gateway-simulator.ts';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'mqtt://localhost:1884' },
    id: { type: 'string' },
    password: { type: 'string' },
    prefix: { type: 'string', default: 'latchkey/v1' },
    answer: { type: 'string', default: 'ok' }, // ok | error | none
    error: { type: 'string', default: 'device_error' }, // device_missing | device_error
    locks: { type: 'string', default: '' }, // lock ids for random activity, comma-separated
    key: { type: 'string' }, // key id used by random activity
    random: { type: 'string', default: '0' }, // random door events a minute
    data: { type: 'string' }, // where the access list is kept (default: data/gateway-<id>-access.json)
    offline: { type: 'boolean', default: false }, // start with the link cut
    help: { type: 'boolean', default: false },
  },
});

const usage = `npm run gateway -- --id <gateway id> --password <password> [--url mqtt://localhost:1884]
  [--answer ok|error|none] [--error device_missing|device_error] [--locks 1,2 --key 7 --random 6]
  [--data data/gateway-<id>-access.json] [--offline]
${STDIN_HELP}`;

if (values.help || !values.id || !values.password) {
  console.log(usage);
  process.exit(values.help ? 0 : 1);
}

await simulateGateway({
  url: values.url,
  id: values.id,
  password: values.password,
  prefix: values.prefix,
  // Anything but ok and none answers with an error, as before.
  answer: values.answer === 'ok' || values.answer === 'none' ? values.answer : 'error',
  error: values.error,
  locks: values.locks.split(',').filter(Boolean).map(Number),
  key: values.key ? Number(values.key) : null,
  randomPerMinute: Number(values.random),
  input: process.stdin,
  log: (line) => console.log(line),
  dataFile: values.data ?? `data/gateway-${values.id}-access.json`,
  offline: values.offline,
});
process.exit(0);
