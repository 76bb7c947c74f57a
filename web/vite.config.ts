/// <reference types="vitest/config" />
/**
 * Vite builds the app into web/dist, which the server serves at / (src/web/serve.ts). The CSP nonce
 * placeholder is replaced by the server with a fresh nonce on every index.html answer.
 * `npm run dev -w web` runs a dev server that proxies the APIs to a server on :3000 (QM_API to change).
 */
import { defaultClientConditions, defaultServerConditions, defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const api = process.env.QM_API ?? 'http://127.0.0.1:3000';

export default defineConfig({
  plugins: [react()],
  // @queuemate/client from its TypeScript sources (its package.json's `@queuemate/source` condition):
  // the web app needs no built client/dist, and a change to the client is in the next build
  resolve: { conditions: ['@queuemate/source', ...defaultClientConditions] },
  // the unit tests (vitest, environment node) resolve as a server does
  ssr: { resolve: { conditions: ['@queuemate/source', ...defaultServerConditions] } },
  html: { cspNonce: '__QM_CSP_NONCE__' },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1500 },
  server: { proxy: { '/v1': api, '/api': api, '/connect': api } },
  test: { environment: 'node', include: ['src/**/*.test.{ts,tsx}'] },
});
