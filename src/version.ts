// The service's version, package.json's: in the start-up line and the latchkey_build_info metric.
import { readFileSync } from 'node:fs';

export const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
