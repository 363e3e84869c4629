# syntax=docker/dockerfile:1
# One image per component, one target each:
#   gateway auth tasks notifier webhook scheduler firewall operator
# e.g. docker build --target gateway --build-arg SERVICE_COMMIT=$(git rev-parse HEAD) \
#        --build-arg PUBLIC_APP_URL=https://tasks.example.com -t task-service-gateway .
# The six services run from an esbuild bundle of their TypeScript sources (the bundle stage:
# tools/build/bundle.ts), so node neither strips types nor resolves hundreds of module files at
# start; the firewall and the operator run their sources (Node 24 type stripping). The UI is a Vite
# bundle. Every service migrates its own schema before it serves (runtime/src/service.ts).

ARG NODE_IMAGE=node:24-bookworm-slim
ARG PNPM_VERSION=12.21.0

# ---- workspace manifests only: dependency layers are rebuilt only when these change ----
FROM ${NODE_IMAGE} AS manifests
WORKDIR /app
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY proto/package.json proto/
COPY services/runtime/package.json services/runtime/
COPY services/gateway/package.json services/gateway/
COPY services/auth/package.json services/auth/
COPY services/tasks/package.json services/tasks/
COPY services/notifier/package.json services/notifier/
COPY services/webhook/package.json services/webhook/
COPY services/scheduler/package.json services/scheduler/
COPY services/firewall/package.json services/firewall/
COPY operator/package.json operator/
COPY tools/package.json tools/
COPY ui/package.json ui/

# ---- production dependencies of the whole workspace (no dev tools in the images) ----
FROM manifests AS prod-deps
ARG PNPM_VERSION
# Only for builds behind a TLS-intercepting proxy (tools/k8s/build-images.sh bind-mounts the host bundle).
ARG NODE_EXTRA_CA_CERTS
RUN npm install -g pnpm@${PNPM_VERSION} \
 && pnpm install --frozen-lockfile --prod

# ---- the whole workspace with its development tools (Vite, esbuild): the build stages start here ----
FROM manifests AS dev-deps
ARG PNPM_VERSION
ARG NODE_EXTRA_CA_CERTS
RUN npm install -g pnpm@${PNPM_VERSION} \
 && pnpm install --frozen-lockfile
COPY . .

# ---- the UI bundle: PUBLIC_APP_URL is inlined at build time (spec: Versioning) ----
FROM dev-deps AS ui-build
ARG PUBLIC_APP_URL=http://localhost:3000
ENV PUBLIC_APP_URL=${PUBLIC_APP_URL}
RUN pnpm --filter @tasksvc/ui build

# ---- each service's esbuild bundle, /app/bundle/<name>/main.mjs (+ lazy chunks, source maps) ----
# Paths a module finds beside its own source (migrations, ui/dist, package.json) are fixed to /app/…
# at bundle time: the runtime stage keeps the sources at the same place, so the bundle finds them.
FROM dev-deps AS bundle
RUN node tools/build/bundle.ts --sourcemap /app/bundle gateway auth tasks notifier webhook scheduler

# ---- common runtime: sources + production node_modules, user 1001 ----
# (the sources stay: the bundles read migrations and package.json beside them, and the firewall and
# operator run from them)
FROM ${NODE_IMAGE} AS runtime
ARG SERVICE_COMMIT=""
ARG PUBLIC_APP_URL=http://localhost:3000
# MALLOC_ARENA_MAX: fewer glibc malloc arenas, a few MB less per process (services/runtime/src/gc-tuning.ts STANDALONE_ENV)
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    SERVICE_COMMIT=${SERVICE_COMMIT} \
    PUBLIC_APP_URL=${PUBLIC_APP_URL}
WORKDIR /app
RUN groupadd --gid 1001 app && useradd --uid 1001 --gid 1001 --no-create-home --shell /usr/sbin/nologin app
COPY --from=prod-deps /app /app
COPY . .
USER 1001

# Each service starts its bundle with the node flags of services/runtime/src/gc-tuning.ts
# (STANDALONE_NODE_FLAGS: why there); tools/k8s/dockerfile.test.ts keeps these CMDs equal to it.
# Stack traces name the bundle's files and lines; NODE_OPTIONS=--enable-source-maps maps them back to
# the TypeScript sources (docs/kubernetes.md, Images: what it costs).
FROM runtime AS gateway
COPY --from=ui-build /app/ui/dist /app/ui/dist
COPY --from=bundle /app/bundle/gateway /app/bundle/gateway
EXPOSE 3000
# Start period: migrations run before the server listens. The port follows PORT (default 3000).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=384", "bundle/gateway/main.mjs"]

FROM runtime AS auth
COPY --from=bundle /app/bundle/auth /app/bundle/auth
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=384", "bundle/auth/main.mjs"]

FROM runtime AS tasks
COPY --from=bundle /app/bundle/tasks /app/bundle/tasks
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=384", "bundle/tasks/main.mjs"]

FROM runtime AS notifier
COPY --from=bundle /app/bundle/notifier /app/bundle/notifier
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=384", "bundle/notifier/main.mjs"]

FROM runtime AS webhook
COPY --from=bundle /app/bundle/webhook /app/bundle/webhook
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=384", "bundle/webhook/main.mjs"]

FROM runtime AS scheduler
COPY --from=bundle /app/bundle/scheduler /app/bundle/scheduler
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=384", "bundle/scheduler/main.mjs"]

# The core needs root and CAP_NET_ADMIN at run time (the operator's DaemonSet runs it privileged as
# uid 0); the image default stays unprivileged, which suits the web component.
FROM runtime AS firewall
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends libnftables1 \
 && rm -rf /var/lib/apt/lists/*
USER 1001
CMD ["node", "services/firewall/src/cli.ts", "core", "--config", "/etc/task-firewall/config.json"]

FROM runtime AS operator
CMD ["node", "operator/src/main.ts"]
