/** The people's API types, generated from the server's OpenAPI (client/generate.ts). */
export type { paths, components } from './schema.js';
