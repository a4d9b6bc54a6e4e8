/**
 * A nats-server left behind by a launcher that died without stopping it (`kill -9` of `ldbox dev`): its
 * pid file is still there. Before a new server takes the same data dir, the old one must go, or both
 * would write the same JetStream store.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';

/**
 * Stops (SIGTERM, then waits up to 5 s) the process named in `pidFile` when it is a nats-server whose
 * command line contains `marker` (a path only that server was started with), then removes the pid file.
 * A pid reused by an unrelated process fails the marker check and is left alone.
 */
export async function stopLeftoverNatsServer(pidFile: string, marker: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    /* not running (or no /proc) */
  }
  if (Number.isSafeInteger(pid) && pid > 1 && cmdline.includes('nats-server') && cmdline.includes(marker)) {
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 50));
  }
  rmSync(pidFile, { force: true });
}
