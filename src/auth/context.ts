/** Who is calling the Mate API: the result of authenticateMate (authenticate.ts). */
export interface MateContext {
  tenantId: number;
  clientId: string;
  /** The tenant's IANA time zone (docs/product.md §4). */
  timeZone: string;
  mateId: number;
  /** The Mate's display name (its username when none was given). */
  mateName: string;
}
