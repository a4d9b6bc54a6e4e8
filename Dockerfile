# syntax=docker/dockerfile:1
#
# One image for the three roles: the command picks the role.
#
#   docker build -t ldbox .
#   docker run ldbox gateway      # LDBOX_ADMIN_TOKEN, LDBOX_DATA_KEY(_FILE), NATS_URL, …
#   docker run ldbox executor     # LDBOX_DATA_KEY(_FILE), NATS_URL, LDBOX_RUNNER_URLS, …
#   docker run ldbox runner       # LDBOX_RUNNER_TOKEN (or TLS client certificates)
#
# Ports (the defaults of the config modules): gateway 8080, executor 8081, runner 50051. Every role
# binds 0.0.0.0 here (a container's loopback is reachable by nobody else); the runner refuses to start
# on a non-loopback address without LDBOX_RUNNER_TOKEN or LDBOX_RUNNER_TLS_CLIENT_CA, on purpose.
#
# No HEALTHCHECK: the image runs three roles on three different ports, so no single check fits, and
# Kubernetes ignores HEALTHCHECK anyway. compose.yaml gives each service its own check on /readyz, and
# kubernetes.yaml uses HTTP probes (/readyz, /healthz) and the gRPC probe on the runner.
#
# Checked against the code by test/deploy/deployment-files.test.ts.

ARG NODE_IMAGE=node:20.18.1-bookworm-slim

# ---- build: all dependencies, TypeScript compiled to dist/ ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No dependency has an install script; the package's own `prepare` (tsc) needs the sources, so it is
# skipped here and run as `npm run build` below, once the sources are in.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.client.json ./
COPY bin ./bin
COPY types ./types
COPY src ./src
COPY runner ./runner
COPY gateway ./gateway
COPY test ./test
COPY bench ./bench
RUN npm run build

# ---- runtime: production dependencies and the compiled roles only ----
FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would run tsc, a dev dependency that is not installed here.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/runner ./dist/runner
COPY --from=build /app/dist/gateway ./dist/gateway
# The gateway's web console (/console/): static files, read from here at start.
COPY console ./console

ENV LDBOX_GATEWAY_HOST=0.0.0.0 \
    LDBOX_EXECUTOR_HOST=0.0.0.0 \
    LDBOX_RUNNER_HOST=0.0.0.0

# gateway, executor (ops port), runner
EXPOSE 8080 8081 50051

# The image's `node` user (uid 1000); nothing is written to the image's file system at run time, so
# the root file system can be mounted read-only.
USER node

# node is PID 1 and handles SIGTERM itself: the role drains (up to 10 s), a second SIGTERM stops at once.
ENTRYPOINT ["node", "bin/ldbox.js"]
CMD ["gateway"]
