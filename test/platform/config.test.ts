import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { secretsOf } from '../../src/platform/startup.ts';

describe('configuration', () => {
  test('defaults follow the contract table', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.databaseUrl, null);
    assert.equal(config.dataDir, './data');
    assert.equal(config.mqttUrl, null);
    assert.equal(config.mqttPort, 1884);
    assert.equal(config.mqttHost, '0.0.0.0', 'the broker listens on every interface whatever HOST says');
    assert.equal(config.redisUrl, null);
    assert.equal(config.publicUrl, 'http://localhost:8080');
    assert.equal(config.adminToken, null);
    assert.equal(config.sandbox, false);
    assert.equal(config.keyRevocationEnabled, true);
    assert.deepEqual(config.webhookAllowHosts, []);
    assert.equal(config.trustProxy, false);
    assert.equal(config.apiRateLimitPerMinute, 600);
  });

  test('PUBLIC_URL defaults to localhost on PORT; lists and booleans are parsed', () => {
    const config = loadConfig({ PORT: '9000', SANDBOX: 'TRUE', WEBHOOK_ALLOW_HOSTS: ' a.test , B.test,', KEY_REVOCATION_ENABLED: 'false' });
    assert.equal(config.publicUrl, 'http://localhost:9000');
    assert.equal(config.sandbox, true);
    assert.equal(config.keyRevocationEnabled, false);
    assert.deepEqual(config.webhookAllowHosts, ['a.test', 'b.test']);
  });

  test('WEBHOOK_ALLOW_HOSTS takes host names only: a scheme, a port, a space or a non-ASCII name stops the start', () => {
    assert.deepEqual(loadConfig({ WEBHOOK_ALLOW_HOSTS: 'localhost, Receiver.Internal,::1,127.0.0.1' }).webhookAllowHosts, ['localhost', 'receiver.internal', '::1', '127.0.0.1']);
    for (const value of ['http://x', 'y z', 'host:8443', 'a.test/hooks', 'bücher.example']) {
      assert.throws(
        () => loadConfig({ WEBHOOK_ALLOW_HOSTS: `a.test,${value}` }),
        (error: unknown) => error instanceof ConfigError && error.message.startsWith('WEBHOOK_ALLOW_HOSTS: expected comma-separated host names'),
        value,
      );
    }
  });

  test('an invalid value is refused with a message naming the variable', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ PORT: 'eighty' }, 'PORT'],
      [{ PORT: '70000' }, 'PORT'],
      [{ MQTT_PORT: '-1' }, 'MQTT_PORT'],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
      [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
      [{ MQTT_URL: 'http://x' }, 'MQTT_URL'],
      [{ PUBLIC_URL: 'ftp://x' }, 'PUBLIC_URL'],
      [{ SANDBOX: 'maybe' }, 'SANDBOX'],
      [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
      [{ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY'],
      [{ TRUST_PROXY: '17' }, 'TRUST_PROXY'],
      [{ KEY_REVOCATION_ENABLED: 'nope' }, 'KEY_REVOCATION_ENABLED'],
      [{ ADMIN_TOKEN: 'short' }, 'ADMIN_TOKEN'],
    ];
    for (const [env, variable] of cases) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && error.variable === variable && error.message.startsWith(variable),
        JSON.stringify(env),
      );
    }
  });

  test("a URL that does not parse is not shown with its password or query: the message is logged", () => {
    const cases: Array<[string, string, string]> = [
      ['DATABASE_URL', 'postgres://app:S3cretPW@db.internal:65536/latchkey', 'postgres://app:***@db.internal:65536/latchkey'],
      ['SMTP_URL', 'smtp://mailer:pa/ss@w0rd@mail.example:99999', 'smtp://mailer:***@mail.example:99999'],
      ['SMS_URL', 'https://sms.example:123456/send?token=S3cretToken', 'https://sms.example:123456/send?***'],
      ['REDIS_URL', 'redis://:S3cretPW@[::1:6379', 'redis://:***@[::1:6379'],
    ];
    for (const [variable, value, shown] of cases) {
      assert.throws(
        () => loadConfig({ [variable]: value }),
        (error: unknown) => error instanceof ConfigError && error.message === `${variable}: not a valid URL: "${shown}"` && !/S3cret|w0rd/.test(error.message),
        value,
      );
    }
  });

  test("the secrets a failed start scrubs from its log include every URL's password and token, SMS_URL's too", () => {
    const secrets = secretsOf(loadConfig({ SMS_URL: 'https://sms:SmsPass99@sms.example/send?api_token=SmsToken99', REDIS_URL: 'redis://:RedisPass99@127.0.0.1:6379' }));
    for (const secret of ['SmsPass99', 'SmsToken99', 'RedisPass99']) assert.ok(secrets.includes(secret), secret);
  });

  test('TRUST_PROXY: true is the one proxy in front, a number counts proxies, a list names them; never every hop', () => {
    const trust = (value: string) => loadConfig({ TRUST_PROXY: value }).trustProxy;
    assert.equal(trust('true'), 1);
    assert.equal(trust('1'), 1);
    assert.equal(trust('false'), false);
    assert.equal(trust('0'), false);
    assert.equal(trust('3'), 3);
    assert.deepEqual(trust('10.0.0.1, 192.168.0.0/16,::1, fd00::/8, Loopback'), ['10.0.0.1', '192.168.0.0/16', '::1', 'fd00::/8', 'loopback']);
  });
});
