import { describe, expect, it } from 'vitest';
import { blockedReason, checkAddress, embeddedIpv4, parseAllowList } from './address.ts';

describe('SSRF address classification', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.254', 'carrier-grade NAT'],
    ['169.254.169.254', 'link-local (includes the cloud metadata address 169.254.169.254)'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.251', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fc00::1', 'unique local (private)'],
    ['fd12:3456::1', 'unique local (private)'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local (includes the cloud metadata address 169.254.169.254)'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['fd00:ec2::254', 'unique local (private)'],
    // #19.10: every spelling of an embedded IPv4, decided on the number, not the text
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'loopback'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['0000:0000:0000:0000:0000:FFFF:0A00:0001', 'private'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b:0:0:0:0:a9fe:a9fe', 'link-local (includes the cloud metadata address 169.254.169.254)'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:0a00:0001::1', 'private'],
    ['2002:0808:0808::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(blockedReason(address)).toBe(reason);
  });

  it.each(['93.184.216.34', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('allows public %s', (address) => {
    expect(blockedReason(address)).toBeNull();
  });

  it('extracts IPv4 from mapped, compatible and NAT64 forms', () => {
    expect(embeddedIpv4('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(embeddedIpv4('::ffff:a00:1')).toBe('10.0.0.1');
    expect(embeddedIpv4('64:ff9b::a9fe:a9fe')).toBe('169.254.169.254');
    expect(embeddedIpv4('2001:db8::1')).toBeNull();
    expect(embeddedIpv4('::ffff:0:a00:1')).toBe('10.0.0.1');
    expect(embeddedIpv4('::a00:1')).toBe('10.0.0.1');
    expect(embeddedIpv4('2002:a9fe:a9fe::')).toBe('169.254.169.254');
    expect(embeddedIpv4('::1')).toBeNull();
    expect(embeddedIpv4('2606:4700::1111')).toBeNull();
  });

  it('an allow-listed host name or network overrides the block, nothing else does', () => {
    const allow = parseAllowList(['receiver.internal', '10.20.0.0/16', '127.0.0.1', 'fd00::/8']);
    expect(checkAddress(allow, 'receiver.internal', '10.9.9.9')).toEqual({ ok: true });
    expect(checkAddress(allow, 'other.internal', '10.20.3.4')).toEqual({ ok: true });
    expect(checkAddress(allow, 'x', '127.0.0.1')).toEqual({ ok: true });
    expect(checkAddress(allow, 'x', '::ffff:127.0.0.1')).toEqual({ ok: true });
    expect(checkAddress(allow, 'x', 'fd00::5')).toEqual({ ok: true });
    expect(checkAddress(allow, 'other.internal', '10.21.0.1')).toEqual({ ok: false, reason: 'private' });
    expect(checkAddress(allow, 'x', '127.0.0.2')).toEqual({ ok: false, reason: 'loopback' });
    expect(checkAddress(parseAllowList([]), 'x', '169.254.169.254').ok).toBe(false);
  });

  it('rejects a malformed allow-list entry', () => {
    expect(() => parseAllowList(['not a host/33'])).toThrow(/OUTBOUND_ALLOW_LIST/);
    expect(() => parseAllowList(['10.0.0.0/40'])).toThrow(/bad prefix/);
  });
});
