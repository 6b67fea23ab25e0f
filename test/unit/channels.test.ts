// NOTIFY channels are named once, in src/platform/channels.ts. TypeScript holds its own callers to that list
// (Database.listen and Transaction.notify take a Channel); SQL cannot import it, so this reads every
// migration and every SQL written in src, bench and scripts for the channels they notify: a name that is
// not registered (a misspelling, in a migration already applied or a new one) fails here, and so does a
// registered name that nothing sends or nothing in the service refers to.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import * as registry from '../../src/platform/channels.ts';

const REGISTRY_FILE = path.normalize('src/platform/channels.ts');
const REGISTERED = new Set<string>(registry.CHANNELS);
/** The registry's constants by name (WEBHOOK_DUE_CHANNEL → webhook_due), for SQL built in TypeScript. */
const CONSTANTS = new Map(
  Object.entries(registry as Record<string, unknown>).filter((entry): entry is [string, string] => entry[0].endsWith('_CHANNEL') && typeof entry[1] === 'string'),
);

function filesUnder(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return filesUnder(file, pattern);
    return pattern.test(name) ? [file] : [];
  });
}

const sources = [...filesUnder('src', /\.(ts|tsx|sql)$/), ...filesUnder('bench', /\.ts$/), ...filesUnder('scripts', /\.(ts|mjs)$/)].map((file) => ({
  file,
  text: readFileSync(file, 'utf8'),
}));

/** `'latchkey_' || current_schema() || '_…'`: the name in SQL (Database.channel's naming). */
const SQL_NAME = /'latchkey_'\s*\|\|\s*current_schema\(\)\s*\|\|\s*'_(?:([a-z0-9_]+)'|\$\{(\w+)\}'|'\s*\|\|\s*TG_ARGV\[0\])/g;
/**
 * `latchkey_${schema}_…` in a TypeScript template with a constant or a name (a script notifying as another
 * instance would); the engines' own `${name}` is Database.channel, whose callers are typed.
 */
const TEMPLATE_NAME = /latchkey_\$\{[^}]+\}_(?:\$\{([A-Z][A-Z0-9_]*)\}|([a-z0-9_]+))/g;

interface Sent {
  name: string;
  where: string;
}

/** Every channel a source sends to, with where; `TG_ARGV` names are those of the triggers calling the function. */
function sentChannels(): Sent[] {
  const sent: Sent[] = [];
  const resolve = (constant: string, where: string): string => {
    const name = CONSTANTS.get(constant);
    assert.ok(name, `${where}: \${${constant}} is not a constant of src/platform/channels.ts`);
    return name;
  };
  for (const { file, text } of sources) {
    for (const match of text.matchAll(SQL_NAME)) {
      const where = `${file}: ${match[0]}`;
      if (match[1]) sent.push({ name: match[1], where });
      else if (match[2]) sent.push({ name: resolve(match[2], where), where });
      else {
        // The channel is the trigger's argument: the function is the one whose body this is.
        const before = text.slice(0, match.index);
        const fn = [...before.matchAll(/CREATE (?:OR REPLACE )?FUNCTION (\w+)\(/g)].at(-1)?.[1];
        assert.ok(fn, `${where}: a channel from TG_ARGV outside a function`);
        const calls = [...sources.flatMap((s) => [...s.text.matchAll(new RegExp(`EXECUTE FUNCTION ${fn}\\('([^']*)'\\)`, 'g'))])];
        assert.ok(calls.length > 0, `${where}: no trigger calls ${fn}`);
        for (const call of calls) sent.push({ name: call[1] as string, where: `a trigger's EXECUTE FUNCTION ${fn}('${call[1]}')` });
      }
    }
    for (const match of text.matchAll(TEMPLATE_NAME)) {
      const where = `${file}: ${match[0]}`;
      sent.push({ name: match[1] ? resolve(match[1], where) : (match[2] as string), where });
    }
    for (const match of text.matchAll(/\.notify\((\w+)/g)) {
      const constant = match[1] as string;
      if (CONSTANTS.has(constant)) sent.push({ name: CONSTANTS.get(constant) as string, where: `${file}: .notify(${constant}` });
    }
  }
  return sent;
}

test('every channel that SQL or a script notifies is registered', () => {
  const unknown = sentChannels().filter((s) => !REGISTERED.has(s.name));
  assert.deepEqual(unknown.map((s) => `${s.name} (${s.where})`), []);
});

test('every pg_notify names its channel in a form this test reads', () => {
  const unread: string[] = [];
  for (const { file, text } of sources) {
    for (const match of text.matchAll(/pg_notify\(\s*([^,]+),/g)) {
      const first = (match[1] as string).trim();
      // $1: the engines' Transaction.notify, whose channel is typed Channel; `channel`: a variable set by SQL_NAME above.
      const read = first === '$1' || SQL_NAME.test(first) || (first === 'channel' && /channel text := 'latchkey_' \|\| current_schema\(\) \|\| '_/.test(text)) || /^'?latchkey_\$\{/.test(first);
      SQL_NAME.lastIndex = 0;
      if (!read) unread.push(`${file}: pg_notify(${first}, …`);
    }
  }
  assert.deepEqual(unread, []);
});

test('every registered channel is sent somewhere and referred to by the service', () => {
  const sent = new Set(sentChannels().map((s) => s.name));
  const service = sources.filter((s) => s.file.startsWith('src') && s.file !== REGISTRY_FILE && /\.ts$/.test(s.file));
  const problems: string[] = [];
  for (const [constant, name] of CONSTANTS) {
    if (!sent.has(name)) problems.push(`${name}: nothing notifies it`);
    if (!service.some((s) => new RegExp(`\\b${constant}\\b`).test(s.text))) problems.push(`${name}: no file of src refers to ${constant}`);
  }
  assert.deepEqual(problems, []);
  assert.deepEqual([...CONSTANTS.values()].sort(), [...REGISTERED].sort(), 'CHANNELS lists every *_CHANNEL constant');
});

test('no TypeScript of src spells a channel name: it imports the constant', () => {
  const spelt: string[] = [];
  for (const { file, text } of sources) {
    if (file === REGISTRY_FILE || !/\.tsx?$/.test(file)) continue;
    for (const name of REGISTERED) if (new RegExp(`['"\`_]${name}['"\`]`).test(text)) spelt.push(`${file}: ${name}`);
  }
  assert.deepEqual(spelt, []);
});
