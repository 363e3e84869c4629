export { buildGateway, DEFAULT_UI_DIR, type GatewayDeps } from './app.ts';
export { gatewayService } from './service.ts';
