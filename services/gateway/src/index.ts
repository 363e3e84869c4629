export { buildGateway, DEFAULT_UI_DIR } from './app.ts';
export type { GatewayDeps } from './deps.ts';
export { gatewayService } from './service.ts';
