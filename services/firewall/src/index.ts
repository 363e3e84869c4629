export * from './config.ts';
export * from './errors.ts';
export * from './rules.ts';
export * from './ruleset.ts';
export { request, type Reply } from './socket.ts';
