// Probe: Node.js alone.
import { reportRss } from './rss.js';

reportRss(undefined);
