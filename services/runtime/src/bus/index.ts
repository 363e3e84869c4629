export * from './types.ts';
export { createMemoryBus } from './memory.ts';
export { createNatsBus } from './nats.ts';
export { subjectMatches } from './envelope.ts';
