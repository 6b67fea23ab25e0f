#!/usr/bin/env node
// The `latchkey` command: the CLI built as JavaScript (dist/, by build.mjs; `npm ci` builds it), rebuilt first
// when a source is newer than the build. No TypeScript is compiled on an ordinary call.
import { build, isFresh } from '../build.mjs';

if (!isFresh()) await build();
const { main } = await import('../dist/latchkey.mjs');
process.exitCode = await main(process.argv.slice(2));
