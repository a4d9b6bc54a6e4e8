/**
 * The deployment kit (Dockerfile, .dockerignore, compose.yaml, kubernetes.yaml, the NATS chart values in
 * the README) checked against the code, since no container runtime runs the files here:
 * - every command is a CLI command (`ldbox <role> --help` answers 0), every build script is in package.json;
 * - every environment variable a role is given is a setting that role reads (COMMAND_SETTINGS), and the
 *   role's own config loader accepts the whole environment (secrets replaced by valid stand-ins);
 * - every port, container port, probe and health check is the port the loader says the role serves,
 *   every probe path is the ops route it claims to be (asked of src/http/ops-routes.ts itself), the gRPC
 *   probe names the service the runner's health reports;
 * - the wiring: NATS seed lists, runner URLs, Services, PodDisruptionBudgets, the autoscaler, secrets
 *   referenced and never written in, non-root and read-only file systems, grace periods longer than the drain.
 * The YAML is read by a strict subset reader (yaml-subset.ts), which refuses what it does not know.
 */
import { existsSync, readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import t from 'tap';
import { COMMAND_SETTINGS } from '../../src/cli/known-settings.js';
import { loadExecutorConfig } from '../../src/executor/executor-config.js';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { isLoopback, loadRunnerConfig } from '../../runner/config/runner-config.js';
import { runCli } from '../../src/cli/main.js';
import { RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { createOpsRoutes, type OpsRoute } from '../../src/http/ops-routes.js';
import { DEFAULT_CLOSE_TIMEOUT_MS } from '../../src/lifecycle/role-lifecycle.js';
import type { Logger } from '../../src/logging/logger.js';
import { maxJobBytes } from '../../src/nats/streams.js';
import { parseYaml, parseYamlDocuments } from './yaml-subset.js';

const ROOT = new URL('../../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
const exists = (path: string) => existsSync(new URL(path, ROOT));

type Role = 'gateway' | 'executor' | 'runner';
const ROLES: readonly Role[] = ['gateway', 'executor', 'runner'];
type Env = Record<string, string>;
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- parsed YAML

const isRole = (s: unknown): s is Role => typeof s === 'string' && (ROLES as readonly string[]).includes(s);
const settingsOf = (role: Role) => new Set(COMMAND_SETTINGS[role].map((s) => s.name));

/** Settings whose values are secrets: a deployment file must take them from a secret, never write them in. */
const SECRET_SETTINGS = new Set(['LDBOX_ADMIN_TOKEN', 'LDBOX_RUNNER_TOKEN', 'LDBOX_DATA_KEY', 'LDBOX_DATA_KEY_OLD', 'NATS_TOKEN']);
const STAND_IN: Env = { LDBOX_DATA_KEY: Buffer.alloc(32, 7).toString('base64'), LDBOX_DATA_KEY_OLD: Buffer.alloc(32, 8).toString('base64') };

/** True when the CLI knows `role` as a command: `ldbox <role> --help` answers 0 (and starts nothing). */
async function cliKnows(role: string): Promise<boolean> {
  const write = process.stdout.write;
  const writeErr = process.stderr.write;
  process.stdout.write = (() => true) as typeof write;
  process.stderr.write = (() => true) as typeof write;
  try {
    return (await runCli([role, '--help'])) === 0;
  } finally {
    process.stdout.write = write;
    process.stderr.write = writeErr;
  }
}

/**
 * What `role` does with `env`: its own loader reads it (a secret or a file it names is replaced by a valid
 * stand-in, files cannot be read here), and says where the role listens.
 */
function load(role: Role, env: Env): { host: string; port: number } {
  const e: Env = {};
  for (const [k, raw] of Object.entries(env)) {
    // Compose interpolation: `${NAME:-default}` is its default; `${NAME}`, `${NAME:?message}` a secret (below) or a stand-in.
    const v = raw.replace(/\$\{(\w+)(?::?-([^}]*)|:?\?[^}]*)?\}/g, (_, _name: string, def: string | undefined) => def ?? 'stand-in');
    if (k.endsWith('_FILE')) e[k.slice(0, -'_FILE'.length)] = STAND_IN[k.slice(0, -'_FILE'.length)] ?? 'x'.repeat(24);
    else if (SECRET_SETTINGS.has(k)) e[k] = STAND_IN[k] ?? 'x'.repeat(24);
    else e[k] = v;
  }
  return role === 'gateway' ? loadGatewayConfig(e) : role === 'executor' ? loadExecutorConfig(e) : loadRunnerConfig(e);
}

/** The ops route `path` is, asked of the ops routes themselves (undefined: no ops route). */
function opsRoute(path: string): OpsRoute | undefined {
  const log = { error() {}, warn() {}, info() {}, debug() {} } as unknown as Logger;
  const routes = createOpsRoutes({ ready: () => true, registry: new Registry(), log });
  return routes({ method: 'GET', url: path }, { writeHead: () => undefined, end: () => undefined });
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function dockerInstructions(text: string): { op: string; args: string }[] {
  const out: { op: string; args: string }[] = [];
  let cur = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line) && cur === '') continue;
    if (/^\s*#/.test(line)) continue;
    cur += `${line.replace(/\\$/, '')} `;
    if (line.endsWith('\\')) continue;
    const m = /^\s*([A-Za-z]+)\s+(.*?)\s*$/.exec(cur);
    if (m) out.push({ op: m[1]!.toUpperCase(), args: m[2]! });
    cur = '';
  }
  return out;
}

/** `.dockerignore` patterns (exact paths, `*` within a name) as a test of a path of the context. */
function dockerIgnored(patterns: string[]): (path: string) => boolean {
  const res = patterns.map(
    (p) =>
      new RegExp(
        `^${p
          .replace(/^\/+|\/+$/g, '')
          .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
          .replaceAll('*', '[^/]*')}(/.*)?$`,
      ),
  );
  return (path) => res.some((re) => re.test(path.replace(/^\.\//, '').replace(/\/+$/, '')));
}

const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; engines: { node: string } };
const tsconfig = JSON.parse(read('tsconfig.json')) as { compilerOptions: { outDir: string }; include: string[] };

/** The roles' ports as the Dockerfile's environment leaves them. */
const dockerEnv: Env = {};

t.test('Dockerfile: build, runtime stage, command, ports, user', async (t) => {
  const all = dockerInstructions(read('Dockerfile'));
  const stages: { name: string | undefined; ins: { op: string; args: string }[] }[] = [];
  const args: Env = {};
  for (const i of all) {
    if (i.op === 'ARG' && stages.length === 0) {
      const [k, v] = i.args.split('=');
      args[k!] = v ?? '';
    }
    if (i.op === 'FROM') stages.push({ name: /\bAS\s+(\S+)/i.exec(i.args)?.[1], ins: [] });
    else stages.at(-1)?.ins.push(i);
  }
  t.ok(stages.length >= 2, 'multi-stage');
  const build = stages[0]!;
  const runtime = stages.at(-1)!;
  const runs = (s: typeof build) => s.ins.filter((i) => i.op === 'RUN').map((i) => i.args);

  // The Node image satisfies package.json's engines.
  const image = Object.values(args).find((v) => v.startsWith('node:')) ?? '';
  const version = /^node:(\d+)\.(\d+)\.(\d+)/.exec(image);
  const wanted = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(pkg.engines.node);
  t.ok(version && wanted, `the Node image names an exact version (${image}), engines ${pkg.engines.node}`);
  if (version && wanted) {
    const [a, b] = [version.slice(1).map(Number), wanted.slice(1).map(Number)];
    t.ok(a[0]! * 1e6 + a[1]! * 1e3 + a[2]! >= b[0]! * 1e6 + b[1]! * 1e3 + b[2]!, 'the image Node version satisfies engines');
  }

  // Build steps: npm ci, then only scripts that exist.
  t.ok(
    runs(build).some((r) => /\bnpm ci\b/.test(r)),
    'the build stage runs npm ci',
  );
  t.ok(
    runs(build).some((r) => /\bnpm run build\b/.test(r)),
    'the build stage runs npm run build',
  );
  for (const r of all.filter((i) => i.op === 'RUN').map((i) => i.args)) {
    for (const m of r.matchAll(/\bnpm run (\S+)/g)) t.ok(pkg.scripts[m[1]!], `package.json has the script "${m[1]}"`);
  }
  t.ok(
    runs(runtime).some((r) => /\bnpm ci\b.*--omit=dev/.test(r)),
    'the runtime stage installs production dependencies only',
  );
  t.notOk(
    runs(runtime).some((r) => /\bnpm ci\b/.test(r) && !/--omit=dev/.test(r)),
    'and no full install',
  );

  // Every file the build copies exists and is in the build context.
  const ignored = dockerIgnored(
    read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#')),
  );
  for (const c of all.filter((i) => i.op === 'COPY' && !i.args.includes('--from'))) {
    const parts = c.args.split(/\s+/);
    for (const src of parts.slice(0, -1)) {
      t.ok(exists(src), `COPY ${src}: exists`);
      t.notOk(ignored(src), `COPY ${src}: not excluded by .dockerignore`);
    }
  }
  for (const secret of ['.ldbox', '.git', 'node_modules', 'dist', '.env']) t.ok(ignored(secret), `.dockerignore keeps ${secret} out of the context`);

  // The runtime stage has what bin/ldbox.js loads: the compiled entry, from a directory tsc compiles.
  const copiedDist = runtime.ins.filter((i) => i.op === 'COPY' && i.args.includes('--from=')).map((i) => i.args.split(/\s+/).at(-2)!);
  for (const d of copiedDist) {
    const m = /\/dist\/([^/]+)$/.exec(d);
    t.ok(m && tsconfig.include.includes(m[1]!) && tsconfig.compilerOptions.outDir === 'dist', `${d} is a compiled directory`);
  }
  const entry = /new URL\('\.\.\/(dist\/[^']+)'/.exec(read('bin/ldbox.js'))?.[1];
  t.ok(entry && copiedDist.some((d) => entry.startsWith(`${d.replace(/^\/app\//, '')}/`)), `the runtime stage has ${entry}`);
  t.ok(
    runtime.ins.some((i) => i.op === 'COPY' && /^bin\s/.test(i.args)),
    'the runtime stage has bin/',
  );

  // Command: node bin/ldbox.js <role>.
  const json = (op: string) => JSON.parse(runtime.ins.findLast((i) => i.op === op)?.args ?? 'null') as string[] | null;
  t.same(json('ENTRYPOINT'), ['node', 'bin/ldbox.js'], 'ENTRYPOINT runs the CLI');
  const cmd = json('CMD');
  t.ok(cmd && cmd.length === 1 && (await cliKnows(cmd[0]!)), `CMD ${JSON.stringify(cmd)} is a CLI command`);

  // Non-root.
  const user = runtime.ins.findLast((i) => i.op === 'USER')?.args;
  t.ok(user && !/^(root|0)(:|$)/.test(user), `runs as a non-root user (${user})`);

  // Environment: settings only, and every role reachable from outside the container.
  for (const i of runtime.ins.filter((i) => i.op === 'ENV')) {
    for (const m of i.args.matchAll(/(\w+)=(\S+)/g)) dockerEnv[m[1]!] = m[2]!;
  }
  const anyRole = new Set(ROLES.flatMap((r) => [...settingsOf(r)]));
  for (const k of Object.keys(dockerEnv)) t.ok(anyRole.has(k), `ENV ${k} is a setting`);
  const exposed = new Set(runtime.ins.filter((i) => i.op === 'EXPOSE').flatMap((i) => i.args.split(/\s+/).map(Number)));
  const served = new Set<number>();
  for (const role of ROLES) {
    const own = Object.fromEntries(Object.entries(dockerEnv).filter(([k]) => settingsOf(role).has(k)));
    const c = load(role, { ...own, LDBOX_ADMIN_TOKEN: 'stand-in', LDBOX_DATA_KEY: 'stand-in', LDBOX_RUNNER_TOKEN: 'stand-in' });
    t.notOk(isLoopback(c.host), `${role} binds a non-loopback address in the image (${c.host})`);
    served.add(c.port);
  }
  t.same([...exposed].sort(), [...served].sort(), 'EXPOSE lists the ports the roles serve by default');
  t.notOk(
    runtime.ins.some((i) => i.op === 'HEALTHCHECK'),
    'no HEALTHCHECK (the roles differ; compose and Kubernetes check each)',
  );
});

/** `${NAME…}` interpolations of a compose value. */
const interpolated = (v: string) => [...v.matchAll(/\$\{(\w+)/g)].map((m) => m[1]!);

t.test('compose.yaml: NATS cluster, two of each role, settings, ports and health checks', async (t) => {
  const text = read('compose.yaml');
  const compose = parseYaml(text) as Obj;
  const services = compose.services as Record<string, Obj>;
  const nats = Object.entries(services).filter(([, s]) => String(s.image).startsWith('nats:'));
  const ldbox = Object.entries(services).filter(([, s]) => s.build !== undefined);
  t.equal(nats.length, 3, 'three NATS nodes');
  t.equal(nats.length + ldbox.length, Object.keys(services).length, 'every service is a NATS node or an ldbox role');

  // NATS: one volume each at the store dir, JetStream, auth, authenticated routes to every node.
  const conf = String(compose.configs?.nats_conf?.content ?? '');
  const storeDir = /jetstream\s*\{[^}]*store_dir:\s*(\S+)/.exec(conf)?.[1];
  t.ok(storeDir, 'JetStream on, with a store dir');
  t.match(conf, /\bauthorization\s*\{\s*token:\s*"\$\{NATS_TOKEN/, 'clients need the token');
  t.match(conf, /cluster\s*\{[\s\S]*authorization\s*\{[^}]*password:\s*"\$\{NATS_ROUTE_PASSWORD/, 'routes need a password');
  const clusterPort = Number(/cluster\s*\{[\s\S]*?port:\s*(\d+)/.exec(conf)?.[1]);
  const clientPort = Number(/^port:\s*(\d+)/m.exec(conf)?.[1]);
  const routes = [...conf.matchAll(/"nats:\/\/route:\$\{NATS_ROUTE_PASSWORD\}@([\w-]+):(\d+)"/g)].map((m) => `${m[1]}:${m[2]}`);
  t.same(routes.sort(), nats.map(([n]) => `${n}:${clusterPort}`).sort(), 'routes name every node on the cluster port');
  const maxPayload = /max_payload:\s*(\d+)MB/.exec(conf);
  t.ok(
    maxPayload &&
      Number(maxPayload[1]) * 1e6 >=
        maxJobBytes(loadGatewayConfig({ LDBOX_ADMIN_TOKEN: 'x'.repeat(16), LDBOX_DATA_KEY: STAND_IN.LDBOX_DATA_KEY! }).maxBodyBytes),
    'max_payload fits the default body limit',
  );
  const volumes = new Set<string>();
  for (const [name, s] of nats) {
    const mounts = (s.volumes as string[]).filter((v) => v.endsWith(`:${storeDir}`)).map((v) => v.split(':')[0]!);
    t.equal(mounts.length, 1, `${name} keeps JetStream on a volume`);
    t.ok(compose.volumes && Object.hasOwn(compose.volumes, mounts[0]!), `${name}'s volume is declared`);
    volumes.add(mounts[0]!);
    t.ok(
      s.configs.some((c: Obj) => c.source === 'nats_conf'),
      `${name} uses the config`,
    );
  }
  t.equal(volumes.size, 3, 'each node its own volume');

  // The roles.
  const byRole = new Map<Role, [string, Obj, { host: string; port: number }][]>();
  for (const [name, s] of ldbox) {
    const role = s.command?.[0];
    t.ok(isRole(role) && (await cliKnows(role)) && s.command.length === 1, `${name}: command ${JSON.stringify(s.command)} is a role`);
    if (!isRole(role)) continue;
    const env = Object.fromEntries(Object.entries((s.environment ?? {}) as Obj).map(([k, v]) => [k, String(v)]));
    for (const k of Object.keys(env)) t.ok(settingsOf(role).has(k), `${name}: ${role} reads ${k}`);
    for (const k of Object.keys(env).filter((k) => SECRET_SETTINGS.has(k))) t.match(env[k], /^\$\{\w+:\?/, `${name}: ${k} comes from .env and is required`);
    if (env.LDBOX_DATA_KEY_FILE !== undefined) {
      const secret = /^\/run\/secrets\/(\w+)$/.exec(env.LDBOX_DATA_KEY_FILE)?.[1];
      t.ok(secret && s.secrets?.includes(secret) && compose.secrets?.[secret], `${name}: LDBOX_DATA_KEY_FILE is a declared secret`);
    }
    const c = load(role, { ...Object.fromEntries(Object.entries(dockerEnv).filter(([k]) => settingsOf(role).has(k))), ...env });
    t.notOk(isLoopback(c.host), `${name}: binds a non-loopback address`);
    for (const p of (s.ports ?? []) as string[]) t.equal(Number(p.split(':').at(-1)), c.port, `${name}: publishes the port it serves (${p})`);
    const check = (s.healthcheck?.test ?? []).join(' ') as string;
    const m = /http:\/\/127\.0\.0\.1:(\d+)(\/\w+)/.exec(check);
    t.ok(m && Number(m[1]) === c.port && opsRoute(m[2]!) === 'readyz', `${name}: health check on /readyz of its port (${m?.[0]})`);
    for (const d of (s.depends_on ?? []) as string[]) t.ok(services[d], `${name}: depends on ${d}, a service`);
    t.ok(s.read_only === true && s.cap_drop?.includes('ALL'), `${name}: read-only, no capabilities`);
    t.ok(Number.parseInt(String(s.stop_grace_period), 10) * 1000 > DEFAULT_CLOSE_TIMEOUT_MS, `${name}: stop grace period longer than the drain`);
    byRole.set(role, [...(byRole.get(role) ?? []), [name, s, c]]);
    // The NATS settings: the seed list names every node on its client port, with auth.
    if (role !== 'runner') {
      const seeds = env
        .NATS_URL!.split(',')
        .map((u) => new URL(u))
        .map((u) => `${u.hostname}:${u.port}`);
      t.same(seeds.sort(), nats.map(([n]) => `${n}:${clientPort}`).sort(), `${name}: NATS_URL lists every node`);
      t.ok(env.NATS_TOKEN, `${name}: authenticates to NATS`);
      t.ok(env.LDBOX_DATA_KEY_FILE ?? env.LDBOX_DATA_KEY, `${name}: has the data key`);
    }
  }
  for (const role of ROLES) t.ok((byRole.get(role) ?? []).length >= 2, `two or more ${role}s`);
  for (const [name, s] of byRole.get('gateway') ?? []) t.equal(s.environment.LDBOX_JOBS_REPLICAS, '3', `${name}: replicas 3`);
  const runners = byRole.get('runner') ?? [];
  for (const [name, s] of byRole.get('executor') ?? []) {
    const urls = String(s.environment.LDBOX_RUNNER_URLS)
      .split(',')
      .map((u) => new URL(u));
    t.same(urls.map((u) => `${u.hostname}:${u.port}`).sort(), runners.map(([n, , c]) => `${n}:${c.port}`).sort(), `${name}: calls every runner on its port`);
    t.ok(
      runners.every(([, r]) => r.environment.LDBOX_RUNNER_TOKEN === s.environment.LDBOX_RUNNER_TOKEN),
      `${name}: the runners' token`,
    );
  }
  // Every variable Compose must be given is explained in the file's header.
  const header = text.slice(0, text.indexOf('\nname:'));
  for (const v of new Set(interpolated(text).filter((v) => new RegExp(`\\$\\{${v}:\\?`).test(text))))
    t.match(header, new RegExp(`\\b${v}=`), `the header says how to set ${v}`);
});

/** The named or numbered container port `ref` of `container`. */
function containerPort(container: Obj, ref: unknown): number | undefined {
  if (typeof ref === 'number') return (container.ports as Obj[]).some((p) => p.containerPort === ref) ? ref : undefined;
  return (container.ports as Obj[]).find((p) => p.name === ref)?.containerPort;
}

const matches = (selector: Obj, labels: Obj) => Object.entries(selector).every(([k, v]) => labels[k] === v);

t.test('kubernetes.yaml: Deployments, probes, Services, budgets, autoscaler', async (t) => {
  const docs = parseYamlDocuments(read('kubernetes.yaml')) as Obj[];
  const kind = (k: string) => docs.filter((d) => d.kind === k);
  t.equal(kind('Secret').length, 0, 'no Secret written in the file (they are referenced)');
  const values = natsChartValues();
  const deployments = new Map<Role, { d: Obj; c: Obj; port: number }>();
  for (const d of kind('Deployment')) {
    const pod = d.spec.template.spec as Obj;
    t.ok(matches(d.spec.selector.matchLabels, d.spec.template.metadata.labels), `${d.metadata.name}: selector matches its pods`);
    t.equal(pod.containers.length, 1, `${d.metadata.name}: one container`);
    const c = pod.containers[0] as Obj;
    const role = c.args?.[0];
    t.ok(isRole(role) && c.args.length === 1 && (await cliKnows(role)), `${d.metadata.name}: args ${JSON.stringify(c.args)} is a role`);
    if (!isRole(role)) continue;
    t.notOk(deployments.has(role), `one Deployment for ${role}`);
    t.notOk(c.envFrom, `${d.metadata.name}: no envFrom (every name is checked)`);
    const env: Env = {};
    for (const e of c.env as Obj[]) {
      t.ok(settingsOf(role).has(e.name), `${d.metadata.name}: ${role} reads ${e.name}`);
      if (SECRET_SETTINGS.has(e.name))
        t.ok(e.valueFrom?.secretKeyRef?.name && e.valueFrom.secretKeyRef.key && e.value === undefined, `${d.metadata.name}: ${e.name} from a Secret`);
      else t.type(e.value, 'string', `${d.metadata.name}: ${e.name} is a string`);
      env[e.name] = e.value ?? 'from-secret';
    }
    const cfg = load(role, { ...Object.fromEntries(Object.entries(dockerEnv).filter(([k]) => settingsOf(role).has(k))), ...env });
    t.notOk(isLoopback(cfg.host), `${d.metadata.name}: binds a non-loopback address`);
    t.same(
      (c.ports as Obj[]).map((p) => p.containerPort),
      [cfg.port],
      `${d.metadata.name}: the container port is the one ${role} serves`,
    );
    // Probes.
    const live = c.livenessProbe?.httpGet;
    t.ok(live && opsRoute(live.path) === 'healthz' && containerPort(c, live.port) === cfg.port, `${d.metadata.name}: liveness on /healthz of its port`);
    if (role === 'runner') {
      const g = c.readinessProbe?.grpc;
      t.ok(g && g.port === cfg.port && g.service === RunnerService.typeName, `${d.metadata.name}: readiness is the gRPC probe of ${RunnerService.typeName}`);
    } else {
      const r = c.readinessProbe?.httpGet;
      t.ok(r && opsRoute(r.path) === 'readyz' && containerPort(c, r.port) === cfg.port, `${d.metadata.name}: readiness on /readyz of its port`);
    }
    // Resources, non-root, read-only.
    t.ok(c.resources?.requests?.cpu && c.resources.requests.memory && c.resources.limits?.memory, `${d.metadata.name}: requests and a memory limit`);
    t.ok(pod.securityContext?.runAsNonRoot === true && pod.securityContext.runAsUser > 0, `${d.metadata.name}: non-root`);
    t.ok(
      c.securityContext?.readOnlyRootFilesystem === true && c.securityContext.allowPrivilegeEscalation === false,
      `${d.metadata.name}: read-only root, no escalation`,
    );
    const preStop = Number(c.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
    t.ok(
      pod.terminationGracePeriodSeconds * 1000 >= preStop * 1000 + DEFAULT_CLOSE_TIMEOUT_MS + 5000,
      `${d.metadata.name}: grace period covers preStop and the drain`,
    );
    if (role !== 'runner') {
      const seeds = env
        .NATS_URL!.split(',')
        .map((u) => new URL(u))
        .map((u) => `${u.hostname}:${u.port}`);
      const replicas = values.config.cluster.replicas as number;
      t.same(
        seeds,
        Array.from({ length: replicas }, (_, i) => `nats-${i}.nats-headless:${values.config.nats?.port ?? 4222}`),
        `${d.metadata.name}: NATS_URL lists the chart's pods`,
      );
      const secretRef = (c.env as Obj[]).find((e) => e.name === 'NATS_TOKEN')?.valueFrom?.secretKeyRef;
      t.same(secretRef, values.container.env.NATS_TOKEN.valueFrom.secretKeyRef, `${d.metadata.name}: the same NATS token as the chart`);
    }
    if (role === 'gateway') t.equal(Number(env.LDBOX_JOBS_REPLICAS), values.config.cluster.replicas, 'gateway: stream replicas = NATS replicas');
    deployments.set(role, { d, c, port: cfg.port });
  }
  t.same([...deployments.keys()].sort(), [...ROLES].sort(), 'a Deployment per role');
  t.equal(new Set([...deployments.values()].map(({ c }) => c.image)).size, 1, 'one image');

  // Services select one role and point at its port.
  const services = new Map<string, { role: Role; port: Obj }>();
  for (const s of kind('Service')) {
    const target = [...deployments].filter(([, { d }]) => matches(s.spec.selector, d.spec.template.metadata.labels));
    t.equal(target.length, 1, `Service ${s.metadata.name} selects one role`);
    const [role, { c, port }] = target[0]!;
    for (const p of s.spec.ports as Obj[]) {
      t.equal(containerPort(c, p.targetPort), port, `Service ${s.metadata.name}: targets ${role}'s port`);
      services.set(s.metadata.name, { role, port: p });
    }
  }
  const ex = deployments.get('executor')!;
  const runnerUrls = String((ex.c.env as Obj[]).find((e) => e.name === 'LDBOX_RUNNER_URLS')?.value ?? '');
  for (const u of runnerUrls.split(',').map((s) => new URL(s))) {
    const s = services.get(u.hostname);
    t.ok(s && s.role === 'runner' && s.port.port === Number(u.port), `executor: ${u.origin} is the runners' Service`);
  }
  // A budget per role that still lets a node drain.
  for (const [role, { d }] of deployments) {
    const pdbs = kind('PodDisruptionBudget').filter((p) => matches(p.spec.selector.matchLabels, d.spec.template.metadata.labels));
    t.equal(pdbs.length, 1, `${role}: one PodDisruptionBudget`);
    t.ok(pdbs[0] && pdbs[0].spec.minAvailable < d.spec.replicas, `${role}: the budget allows one eviction`);
  }
  // The runners' autoscaler, on CPU.
  const hpa = kind('HorizontalPodAutoscaler');
  t.equal(hpa.length, 1, 'one autoscaler');
  t.same(hpa[0]?.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: deployments.get('runner')!.d.metadata.name }, 'it scales the runners');
  t.ok(
    hpa[0]?.spec.metrics.some((m: Obj) => m.type === 'Resource' && m.resource.name === 'cpu'),
    'on CPU',
  );
  t.ok(hpa[0]?.spec.minReplicas >= 2 && hpa[0]?.spec.maxReplicas > hpa[0]?.spec.minReplicas, 'between two and more');
});

/** The NATS chart values the README gives (the yaml block after "helm install nats"). */
function natsChartValues(): Obj {
  const readme = read('README.md');
  const section = readme.slice(readme.indexOf('\n## Deploying'));
  const block = /```yaml\n# nats-values\.yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error('README, Deploying: no ```yaml block starting "# nats-values.yaml"');
  return parseYaml(block) as Obj;
}

t.test('README: the Deploying section and the NATS chart values', async (t) => {
  const readme = read('README.md');
  const start = readme.indexOf('\n## Deploying');
  t.ok(start > 0, 'a Deploying section');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1) === -1 ? undefined : readme.indexOf('\n## ', start + 1));
  for (const f of ['Dockerfile', '.dockerignore', 'compose.yaml', 'kubernetes.yaml']) {
    t.ok(exists(f), `${f} exists`);
    t.match(section, f, `the section names ${f}`);
  }
  const v = natsChartValues();
  t.equal(v.config.cluster.enabled, true, 'cluster on');
  t.equal(v.config.cluster.replicas, 3, '3 replicas');
  t.ok(v.config.cluster.routeURLs?.user && v.config.cluster.routeURLs.password, 'routes authenticated');
  t.equal(v.config.jetstream.enabled, true, 'JetStream on');
  t.equal(v.config.jetstream.fileStore?.pvc?.enabled ?? true, true, 'on persistent volumes');
  t.equal(v.config.merge?.authorization?.token, '<< $NATS_TOKEN >>', 'clients need the token');
  t.ok(v.container.env.NATS_TOKEN.valueFrom.secretKeyRef, 'the token from a Secret');
  const payload = /^<< (\d+)MB >>$/.exec(String(v.config.merge?.max_payload));
  t.ok(payload && Number(payload[1]) * 1e6 >= maxJobBytes(5 * 1024 * 1024), 'max_payload fits the default body limit');
});
