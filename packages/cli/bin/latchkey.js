#!/usr/bin/env node
// The `latchkey` command: the CLI built as JavaScript (dist/, by build.mjs; `npm ci` builds it), rebuilt first
// when a source is newer than the build. No TypeScript is compiled on an ordinary call.
import { build, isFresh } from '../build.mjs';

// `latchkey … | head` closes the pipe early: stop quietly, as other commands do, instead of an EPIPE stack trace.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

if (!isFresh()) await build();
const { main } = await import('../dist/latchkey.mjs');
process.exitCode = await main(process.argv.slice(2));
