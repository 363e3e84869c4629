export * from './address.ts';
export * from './outbound.ts';
