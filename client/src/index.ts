/** The people's API types and permission table, generated from the server (client/generate.ts, `npm run client`). */
export type { paths, components } from './schema.js';
export { PERMISSIONS, type Permission } from './permissions.js';
