import { serviceConfig } from '../../tools/db/drizzle-kit.ts';

export default serviceConfig('gateway');
