import type { AnyRoute } from './http.ts';

/**
 * Every HTTP route the gateway exposes, from every domain. Each domain module appends its own list
 * here; the gateway and the OpenAPI generator read only this.
 */
export const routes: AnyRoute[] = [];
