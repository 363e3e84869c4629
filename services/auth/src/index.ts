export { authService, createAuthService, type AuthServiceOptions } from './service.ts';
