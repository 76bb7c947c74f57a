/** Builds the app on a fresh test store, with an optional injected clock. */
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../src/app.js';
import { testConfig, type Config } from '../../src/config.js';
import type { Clock } from '../../src/lib/clock.js';
import { testStore, type TestStore } from './db.js';
import { suiteLog } from './log-sink.js';
import { updateProcessSettings, type ProcessSettingsPatch } from '../../src/processes/store.js';

export interface TestApp {
  app: FastifyInstance;
  store: TestStore;
  config: Config;
  close(): Promise<void>;
}

export async function testApp(opts: { clock?: Clock; config?: Partial<Config>; logStream?: NodeJS.WritableStream } = {}): Promise<TestApp> {
  const store = await testStore();
  const config = testConfig(opts.config);
  // the suite's log sink when QUEUEMATE_TEST_LOG_DIR is set (test/helpers/log-sink.ts)
  const log = suiteLog(opts.logStream, config.logLevel);
  const app = await createApp(
    { ...config, logLevel: log.logLevel },
    { store, clock: opts.clock, sweeper: false, logStream: log.logStream },
  );
  await app.ready();
  return {
    app,
    store,
    config,
    async close() {
      await app.close();
      await store.close();
    },
  };
}

/** Changes a process's settings through the app's services, as the people's API does (the app's caches see it at once). */
export function updateSettings(
  t: { app: FastifyInstance },
  tenantId: number,
  processId: number,
  patch: ProcessSettingsPatch,
): Promise<void> {
  return t.app.services.units.autocommit((tx) => updateProcessSettings(tx, tenantId, processId, patch));
}
