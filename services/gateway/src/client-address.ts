/**
 * Fastify's `trustProxy` for TRUST_PROXY_HOPS (#19.12): the client address is the X-Forwarded-For
 * entry `hops` places from the right, i.e. the address the outermost of our own proxies saw. Entries
 * further left were written by the client and are ignored, so a client cannot choose its address.
 * (Fastify refuses a bare hop count, because it cannot know the gateway is reachable only through the
 * proxies; that is the deployment's promise here, documented in docs/security.md.)
 */
export function trustedHops(hops: number): false | ((address: string, hop: number) => boolean) {
  return hops > 0 ? (_address, hop) => hop < hops : false;
}
