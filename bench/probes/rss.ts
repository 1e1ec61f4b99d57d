// Prints this process's resident memory once start-up has settled (what every probe reports).
import { readFileSync } from 'node:fs';

export function reportRss(keep: unknown): void {
  setTimeout(() => {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    process.stdout.write(`${JSON.stringify({ rssMb: kb / 1024, kept: typeof keep })}\n`);
  }, 1500);
}
