export { tasksService } from './service.ts';
