export { authService } from './service.ts';
