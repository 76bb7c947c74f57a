/** Configuration: defaults, environment versus flags, and one clear error per bad setting. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadConfig, ConfigError, SETTINGS, redact, testConfig } from '../src/config.js';

test('defaults match the SETTINGS table', () => {
  const c = loadConfig({});
  assert.equal(c.port, 8080);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.databaseUrl, null);
  assert.equal(c.dataDir, path.resolve('./data'));
  assert.equal(c.logLevel, 'info');
  assert.equal(c.publicUrl, 'http://127.0.0.1:8080');
  assert.equal(c.tokenKeyFile, null);
  assert.equal(c.tokenSecret, null);
  assert.equal(c.bodyLimit, 1048576);
  assert.equal(c.lockSweepIntervalSeconds, 5);
  for (const s of SETTINGS) {
    if (s.key === 'dataDir' || s.key === 'publicUrl') continue; // resolved / derived
    assert.equal(c[s.key], s.default, `default of ${s.env}`);
  }
});

test('every setting has an env name, a flag and a description; names are unique', () => {
  const envs = new Set(SETTINGS.map((s) => s.env));
  const flags = new Set(SETTINGS.map((s) => s.flag));
  assert.equal(envs.size, SETTINGS.length);
  assert.equal(flags.size, SETTINGS.length);
  for (const s of SETTINGS) {
    assert.match(s.env, /^[A-Z][A-Z0-9_]*$/);
    assert.match(s.flag, /^--[a-z][a-z0-9-]*$/);
    assert.ok(s.description.length > 10, `${s.env} is described`);
  }
});

test('environment variables are read; flags win over the environment', () => {
  const env = { PORT: '9000', HOST: '0.0.0.0', LOG_LEVEL: 'debug', QUEUEMATE_DATA_DIR: '/tmp/qm-env' };
  const fromEnv = loadConfig(env);
  assert.equal(fromEnv.port, 9000);
  assert.equal(fromEnv.logLevel, 'debug');
  assert.equal(fromEnv.dataDir, '/tmp/qm-env');
  assert.equal(fromEnv.publicUrl, 'http://localhost:9000', 'a wildcard host is shown as localhost');

  const both = loadConfig(env, ['--port', '9100', '--log-level=warn', '--data-dir', '/tmp/qm-flag']);
  assert.equal(both.port, 9100);
  assert.equal(both.logLevel, 'warn');
  assert.equal(both.dataDir, '/tmp/qm-flag');
  assert.equal(both.host, '0.0.0.0', 'settings without a flag keep the environment value');
});

test('an empty environment variable counts as unset', () => {
  assert.equal(loadConfig({ PORT: '', DATABASE_URL: '' }).port, 8080);
  assert.equal(loadConfig({ DATABASE_URL: '' }).databaseUrl, null);
});

test('DATABASE_URL accepts postgres:// and postgresql://; the public URL loses its trailing slash', () => {
  assert.equal(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/qm' }).databaseUrl, 'postgres://u:p@db:5432/qm');
  assert.equal(loadConfig({ DATABASE_URL: 'postgresql://db/qm' }).databaseUrl, 'postgresql://db/qm');
  assert.equal(loadConfig({ QUEUEMATE_PUBLIC_URL: 'https://queue.example.com/' }).publicUrl, 'https://queue.example.com');
});

test('a relative data directory and key file are resolved against the working directory', () => {
  const c = loadConfig({ QUEUEMATE_DATA_DIR: 'rel/dir', QUEUEMATE_TOKEN_KEY_FILE: 'keys/k.pem' });
  assert.equal(c.dataDir, path.resolve('rel/dir'));
  assert.equal(c.tokenKeyFile, path.resolve('keys/k.pem'));
});

/** Each bad value gives a ConfigError whose message names the setting. */
const BAD: Array<[string, Record<string, string>, string[], RegExp]> = [
  ['port not a number', { PORT: 'abc' }, [], /PORT.*"abc" is not a whole number/],
  ['port out of range', {}, ['--port', '70000'], /--port.*outside 0\.\.65535/],
  ['port fraction', { PORT: '80.5' }, [], /PORT/],
  ['log level', { LOG_LEVEL: 'loud' }, [], /LOG_LEVEL.*"loud" is not one of fatal, error/],
  ['database scheme', { DATABASE_URL: 'mysql://x' }, [], /DATABASE_URL.*postgres:\/\//],
  ['database not a URL', { DATABASE_URL: 'not a url' }, [], /DATABASE_URL.*is not a URL/],
  ['public URL scheme', { QUEUEMATE_PUBLIC_URL: 'ftp://x' }, [], /QUEUEMATE_PUBLIC_URL.*http/],
  ['body limit too small', { QUEUEMATE_BODY_LIMIT: '10' }, [], /QUEUEMATE_BODY_LIMIT.*outside/],
  ['sweep interval zero', { QUEUEMATE_LOCK_SWEEP_INTERVAL: '0' }, [], /QUEUEMATE_LOCK_SWEEP_INTERVAL/],
  ['pool size', { QUEUEMATE_DB_POOL_SIZE: '0' }, [], /QUEUEMATE_DB_POOL_SIZE/],
  ['short token secret', { QUEUEMATE_TOKEN_SECRET: 'short' }, [], /QUEUEMATE_TOKEN_SECRET.*32/],
  [
    'secret and key file',
    { QUEUEMATE_TOKEN_SECRET: 'x'.repeat(32), QUEUEMATE_TOKEN_KEY_FILE: '/k.pem' },
    [],
    /QUEUEMATE_TOKEN_KEY_FILE and QUEUEMATE_TOKEN_SECRET/,
  ],
  ['blank host', { HOST: '  ' }, [], /HOST.*must not be empty/],
  ['unknown flag', {}, ['--prot', '1'], /Unknown option --prot/],
  ['flag without value', {}, ['--port'], /--port needs a value/],
  ['stray argument', {}, ['oops'], /Unexpected argument "oops"/],
  ['trust proxy', { QUEUEMATE_TRUST_PROXY: 'yes please' }, [], /QUEUEMATE_TRUST_PROXY.*"yes please"/],
];

test('QUEUEMATE_TRUST_PROXY takes true/false, a number of hops or a list of addresses', () => {
  assert.equal(loadConfig({}).trustProxy, false);
  assert.equal(loadConfig({ QUEUEMATE_TRUST_PROXY: 'true' }).trustProxy, true);
  assert.equal(loadConfig({}, ['--trust-proxy', '2']).trustProxy, 2);
  assert.equal(loadConfig({ QUEUEMATE_TRUST_PROXY: '10.0.0.0/8, ::1' }).trustProxy, '10.0.0.0/8, ::1');
});

for (const [name, env, argv, message] of BAD) {
  test(`bad configuration: ${name}`, () => {
    assert.throws(
      () => loadConfig(env, argv),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, `ConfigError, got ${String(err)}`);
        assert.match(err.message, message);
        assert.doesNotMatch(err.message, /\n/, 'one line');
        return true;
      },
    );
  });
}

test('a bad DATABASE_URL is reported without its password', () => {
  assert.throws(
    () => loadConfig({ DATABASE_URL: 'mysql://u:hunter2@db/x' }),
    (err: Error) => !err.message.includes('hunter2'),
  );
  assert.equal(redact('postgres://u:hunter2@db/x'), 'postgres://u:***@db/x');
  assert.equal(redact('postgres://db/x'), 'postgres://db/x');
});

test('testConfig is quiet and accepts overrides', () => {
  const c = testConfig({ port: 0 });
  assert.equal(c.logLevel, 'silent');
  assert.equal(c.port, 0);
});
