// npm run gateway -- --id <gateway id> [--password <password>] [options]: `latchkey gateway simulate`, the same
// command with the same flags and settings (the password preferably from LATCHKEY_GATEWAY_PASSWORD, so that it
// stays out of the shell's history and the process list). One code path: packages/cli/src/commands/gateway.ts.
import { main } from '../packages/cli/src/main.ts';

process.exit(await main(['gateway', 'simulate', ...process.argv.slice(2)]));
