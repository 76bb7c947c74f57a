import type { NumberFormat } from '../lib/values.js';

/** Who is calling the Mate API: the result of authenticateMate (authenticate.ts). */
export interface MateContext {
  tenantId: number;
  clientId: string;
  /** The tenant's IANA time zone (docs/product.md §4). */
  timeZone: string;
  /** How the tenant's numbers in strings are read (src/lib/values.ts). */
  numberFormat: NumberFormat;
  mateId: number;
  /** The Mate's display name (its username when none was given). */
  mateName: string;
}
