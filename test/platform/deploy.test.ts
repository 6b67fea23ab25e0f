// What can be checked of the container files without a Docker engine (none runs where the tests run):
// the compose file parses and says what the README says, every variable it sets is one the service reads,
// the Dockerfile runs package.json's commands, and Mosquitto's two configurations say the same.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
  ports?: string[];
  restart?: string;
}

const compose = parse(readFileSync('deploy/compose.yaml', 'utf8'), { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const dockerfile = readFileSync('Dockerfile', 'utf8');
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string>; engines: { node: string } };
const readme = readFileSync('README.md', 'utf8');
const configSource = readFileSync('src/config.ts', 'utf8');
const instances = ['latchkey-1', 'latchkey-2'];

function service(name: string): Service {
  const found = compose.services[name];
  assert.ok(found, `service ${name}`);
  return found;
}

test('the compose file runs two instances on PostgreSQL, Redis and Mosquitto, after a one-shot migration', () => {
  assert.deepEqual(Object.keys(compose.services).sort(), ['latchkey-1', 'latchkey-2', 'migrate', 'mosquitto', 'mosquitto-init', 'postgres', 'redis']);
  const clientIds = new Set<string>();
  for (const name of instances) {
    const instance = service(name);
    assert.equal(instance.build?.dockerfile, 'Dockerfile');
    assert.ok(existsSync(path.join('deploy', instance.build?.context ?? '', 'Dockerfile')));
    const env = instance.environment ?? {};
    assert.match(env.DATABASE_URL ?? '', /^postgres:\/\/latchkey:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/latchkey$/);
    assert.equal(env.REDIS_URL, 'redis://redis:6379');
    assert.match(env.MQTT_URL ?? '', /^mqtt:\/\/latchkey:\$\{MQTT_SERVICE_PASSWORD:\?[^}]+\}@mosquitto:1883$/);
    assert.equal(env.MQTT_DYNSEC_USERNAME, 'latchkey-admin');
    assert.ok(env.MQTT_CLIENT_ID, 'a client id of its own');
    clientIds.add(env.MQTT_CLIENT_ID);
    assert.deepEqual(instance.depends_on, {
      migrate: { condition: 'service_completed_successfully' },
      redis: { condition: 'service_healthy' },
      mosquitto: { condition: 'service_started' },
    });
    assert.equal(instance.command, undefined, "the image's CMD: the service");
  }
  assert.equal(clientIds.size, instances.length, 'MQTT_CLIENT_ID differs per instance');

  const migrate = service('migrate');
  assert.deepEqual(migrate.command, ['npm', 'run', 'migrate']);
  assert.equal(pkg.scripts.migrate, 'node --import tsx src/migrate.ts');
  assert.equal(migrate.restart, 'no');
  assert.equal(migrate.environment?.DATABASE_URL, service('latchkey-1').environment?.DATABASE_URL);
  assert.deepEqual(migrate.depends_on, { postgres: { condition: 'service_healthy' } });
});

test('every variable the compose file gives Latchkey is one src/config.ts reads, and every secret it needs is in .env.example', () => {
  for (const name of ['migrate', ...instances]) {
    for (const variable of Object.keys(service(name).environment ?? {})) {
      assert.ok(configSource.includes(`'${variable}'`), `${name}: ${variable} is not read by src/config.ts`);
    }
  }
  const required = new Set([...readFileSync('deploy/compose.yaml', 'utf8').matchAll(/\$\{([A-Z_]+):\?/g)].map((m) => m[1]));
  const example = readFileSync('deploy/.env.example', 'utf8');
  for (const variable of required) assert.match(example, new RegExp(`^${variable}=`, 'm'), `${variable} in deploy/.env.example`);
});

test("Mosquitto in compose: the dynamic-security file made once, and the image's configuration saying what deploy/mosquitto/mosquitto.conf says", () => {
  const init = service('mosquitto-init');
  const script = (init.command ?? []).join(' ');
  assert.match(script, /test -f \/mosquitto\/data\/dynamic-security\.json \|\|\s+mosquitto_ctrl dynsec init \/mosquitto\/data\/dynamic-security\.json latchkey-admin "\$\$MQTT_DYNSEC_PASSWORD"/);
  const broker = service('mosquitto');
  assert.deepEqual(broker.depends_on, { 'mosquitto-init': { condition: 'service_completed_successfully' } });
  const mounted = (broker.volumes ?? []).find((v) => v.endsWith(':/mosquitto/config/mosquitto.conf:ro'));
  assert.ok(mounted && existsSync(path.join('deploy', mounted.split(':')[0] as string)));

  const directives = (file: string) =>
    new Map(
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => /^[a-z]/.test(line))
        .map((line) => [line.split(/\s+/)[0] as string, line.split(/\s+/).slice(1).join(' ')]),
    );
  const shipped = directives('deploy/mosquitto/mosquitto.conf');
  const image = directives('deploy/mosquitto/docker.conf');
  const paths = new Set(['plugin', 'plugin_opt_config_file', 'persistence_location']);
  for (const [name, value] of shipped) {
    assert.ok(image.has(name), `docker.conf lacks ${name}`);
    if (!paths.has(name)) assert.equal(image.get(name), value, name);
  }
  assert.equal(image.get('plugin'), '/usr/lib/mosquitto_dynamic_security.so');
  assert.equal(image.get('plugin_opt_config_file'), '/mosquitto/data/dynamic-security.json');
});

test("the Dockerfile: node 20 slim, npm ci without dev dependencies, package.json's start command, unprivileged, a health check and the data volume", () => {
  const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
  assert.ok(froms.length >= 2 && froms.every((image) => image === 'node:20-slim'), 'multi-stage on node:20-slim');
  assert.match(pkg.engines.node, /\^20\./, 'Node 20 is promised');
  assert.match(dockerfile, /^RUN npm ci --omit=dev /m);
  const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
  assert.ok(cmd);
  assert.deepEqual(JSON.parse(cmd), pkg.scripts.start?.split(' '), 'CMD is npm start without npm');
  // The service runs from its bundle, built in the image (after the sources are copied) so that a start does not
  // build; esbuild builds it and tsx runs `npm run migrate`: both must survive --omit=dev.
  assert.ok(!cmd.includes('tsx'), 'the service runs without tsx');
  const build = dockerfile.search(/^RUN node scripts\/start\.mjs --build\b/m);
  // The build makes the migrated template as root; the service's user copies it at a first start.
  assert.match(dockerfile, /^RUN node scripts\/start\.mjs --build && chown -R node:node \.cache\/pglite$/m, 'the migrated template is readable by the service');
  assert.ok(build > dockerfile.search(/^COPY src /m) && build > dockerfile.search(/^COPY scripts\/start\.mjs scripts\/server-bundle\.mjs /m), 'the bundle is built from the copied sources');
  const dependencies = (JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> }).dependencies;
  assert.ok(dependencies.tsx && dependencies.esbuild);
  assert.match(dockerfile, /^USER node$/m);
  assert.match(dockerfile, /^HEALTHCHECK .*\n?.*\/healthz/m);
  assert.match(dockerfile, /DATA_DIR=\/data/);
  assert.match(dockerfile, /^VOLUME \["\/data"\]$/m);
  for (const [, source] of dockerfile.matchAll(/^COPY (?!--from)(\S+)/gm)) assert.ok(existsSync(source as string), `COPY ${source}`);
  const ignored = readFileSync('.dockerignore', 'utf8').split('\n');
  for (const needed of ['src', 'scripts', 'packages', 'package.json', 'package-lock.json']) assert.ok(!ignored.includes(needed), `${needed} is not ignored`);
});

test('the README says how to deploy with these files, and what was not run', () => {
  const section = readme.slice(readme.indexOf('## Deploying'), readme.indexOf('\n## ', readme.indexOf('## Deploying') + 1));
  assert.ok(section.length > 100, 'a Deploying section');
  for (const phrase of ['deploy/compose.yaml', 'npm run migrate', 'deploy/.env.example', 'MQTT_CLIENT_ID', 'docker compose', 'not run']) {
    assert.ok(section.includes(phrase), `the Deploying section mentions ${phrase}`);
  }
});
