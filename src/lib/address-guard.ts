/**
 * Outbound requests to addresses given by users (webhook URLs) must not reach the server's own
 * network: loopback, link-local (cloud metadata at 169.254.169.254), private, shared, multicast
 * and reserved ranges are refused unless allowed. The check runs on the address actually
 * connected to (a `lookup` for the http agent), not only on the URL when it is saved, so a name
 * that resolves to a public address at save time and a private one later (DNS rebinding) is
 * still refused.
 */
import dns from 'node:dns';
import net from 'node:net';
import type { LookupFunction } from 'node:net';

const blocked = new net.BlockList();
for (const [a, p] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(a, p, 'ipv4');
for (const [a, p] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(a, p, 'ipv6');

/** Is this IP address one that outbound requests to user-given URLs must not reach? */
export function isNonPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return blocked.check(mapped[1], 'ipv4');
    return blocked.check(address, 'ipv6');
  }
  return true; // not an address at all: refuse
}

export class AddressRefusedError extends Error {
  readonly code = 'EADDRREFUSED_QM';
}

/** A `lookup` for http(s).request that resolves as usual and refuses non-public addresses. */
export function guardedLookup(allowNonPublic: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return (callback as (e: Error | null, a: string, f: number) => void)(err, '', 0);
      const list = addresses as dns.LookupAddress[];
      const usable = allowNonPublic ? list : list.filter((a) => !isNonPublicAddress(a.address));
      if (usable.length === 0) {
        const e = new AddressRefusedError(`${hostname} resolves to ${list.map((a) => a.address).join(', ')}: not a public address`);
        return (callback as (e: Error | null, a: string, f: number) => void)(e, '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      (callback as (e: Error | null, a: string, f: number) => void)(null, usable[0].address, usable[0].family);
    });
  };
}
