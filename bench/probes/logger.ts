// Probe: winston, as the agent's logger.
import { createLogger } from '../../src/log/logger.js';
import { reportRss } from './rss.js';

reportRss(createLogger('json'));
