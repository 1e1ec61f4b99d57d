// Probe: node-cron (cron windows, and the check of --reboot-schedule at start-up).
import { CronWindow } from '../../src/window/cron-window.js';
import { reportRss } from './rss.js';

reportRss(new CronWindow('0 2 * * *', 'UTC'));
