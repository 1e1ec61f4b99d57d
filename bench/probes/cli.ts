// Probe: commander with every flag of the agent, parsed into a Config.
import { FLAGS } from '../../src/config/flags.js';
import { defaultConfig } from '../../src/config/parse.js';
import { addFlags } from '../../src/cli/shared.js';
import { Command } from 'commander';
import { reportRss } from './rss.js';

reportRss([addFlags(new Command('kured-ts'), FLAGS), defaultConfig()]);
