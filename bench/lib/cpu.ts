/**
 * CPU accounting for a bench phase.
 *
 * `process.cpuUsage()` covers the whole process (every thread, including the Piscina workers), so the
 * main thread's own share is read from Linux's per-thread counters: /proc/self/task/<tid>/stat, where the
 * main thread's tid is the pid. Node 20 names every thread "node", so the other threads are reported by
 * size (the two busiest are the sandbox workers during the pool phases). Resolution is one clock tick
 * (10 ms at USER_HZ 100), fine for phases of seconds. Off Linux the per-thread figures are absent.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

const TICK_MS = 10; // USER_HZ is 100 on Linux

type ThreadTicks = Map<number, number>;

/** Busy and total ticks of the whole machine (all cores), from /proc/stat. */
function readMachine(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

function readThreads(): ThreadTicks | undefined {
  try {
    const out: ThreadTicks = new Map();
    for (const name of readdirSync('/proc/self/task')) {
      try {
        const stat = readFileSync(`/proc/self/task/${name}/stat`, 'utf8');
        // Fields after "(comm) ": state is field 3, utime 14, stime 15.
        const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(Number(name), Number(rest[11]) + Number(rest[12]));
      } catch {
        // the thread ended between readdir and read
      }
    }
    return out;
  } catch {
    return undefined;
  }
}

export interface CpuSnapshot {
  wall: number;
  process: NodeJS.CpuUsage;
  threads: ThreadTicks | undefined;
  machine: { busy: number; total: number } | undefined;
  elu: EventLoopUtilization;
}

export interface CpuReport {
  /** CPU of the whole process over the phase, in cores (1.0 = one core busy all the time). */
  processCores: number;
  /** The main thread's CPU as a fraction of wall time (1.0 = saturated); undefined off Linux. */
  mainThread: number | undefined;
  /** The other threads, busiest first, as fractions of wall time. */
  otherThreads: number[];
  /** The main thread's event-loop utilisation (fraction of time not idle in the loop). */
  mainElu: number;
  /**
   * CPU used by everything outside this process (other processes, steal), in cores: a check that the
   * machine was quiet. Undefined off Linux.
   */
  foreignCores: number | undefined;
}

export function cpuSnapshot(): CpuSnapshot {
  return {
    wall: performance.now(),
    process: process.cpuUsage(),
    threads: readThreads(),
    machine: readMachine(),
    elu: performance.eventLoopUtilization(),
  };
}

export function cpuSince(before: CpuSnapshot): CpuReport {
  const after = cpuSnapshot();
  const wallMs = after.wall - before.wall;
  const proc = process.cpuUsage(before.process);
  const processCores = (proc.user + proc.system) / 1000 / wallMs;
  const elu = performance.eventLoopUtilization(after.elu, before.elu).utilization;
  let mainThread: number | undefined;
  const otherThreads: number[] = [];
  if (before.threads && after.threads) {
    for (const [tid, ticks] of after.threads) {
      const delta = ((ticks - (before.threads.get(tid) ?? 0)) * TICK_MS) / wallMs;
      if (tid === process.pid) mainThread = delta;
      else if (delta > 0) otherThreads.push(delta);
    }
    otherThreads.sort((a, b) => b - a);
  }
  let foreignCores: number | undefined;
  if (before.machine && after.machine) {
    // /proc/stat counts busy ticks per core; its steal column is included in busy on purpose.
    const machineCores = ((after.machine.busy - before.machine.busy) * TICK_MS) / wallMs;
    foreignCores = Math.max(0, machineCores - processCores);
  }
  return { processCores, mainThread, otherThreads, mainElu: elu, foreignCores };
}
