export * from './errors.ts';
export * from './bus.ts';
export * from './http.ts';
export * from './health.ts';
export * from './routes.ts';
export * from './auth.ts';
