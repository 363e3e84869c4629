export * from './config.ts';
export * from './logger.ts';
export * from './bus/index.ts';
export * from './db/index.ts';
export * from './service.ts';
export * from './version.ts';
export * from './crypto.ts';
export * from './outbox.ts';
