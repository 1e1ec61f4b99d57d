# kured-ts agent image. Multi-stage: the build stage compiles the esbuild bundle; the runtime stage
# holds Node, the bundle (dist/cli.js, its lazily loaded chunks and a package.json saying they are ES
# modules), nsenter (util-linux) and tzdata, and no node_modules at all.
# NODE_IMAGE lets a test substitute a locally made base (scripts/image-test.sh).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
# Where outbound TLS goes through a proxy, pass its CA bundle (mounted into the build) as a path.
ARG NODE_EXTRA_CA_CERTS=""
COPY package.json package-lock.json ./
# Dev dependencies are needed here (esbuild); none of them reach the runtime stage. --ignore-scripts:
# the package's prepare script builds, and the sources are not copied yet (layer caching).
RUN npm ci --ignore-scripts --no-audit --no-fund
# The sources .dockerignore lets in: tsconfig.json, scripts/build.mjs, src/ and bench/ (build.mjs
# bundles the benchmark too, into dist/bench/; bench/ imports src/ only). Only the agent's bundle
# leaves this stage.
COPY . .
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
# nsenter (util-linux) runs the reboot and sentinel commands in the host's mount namespace;
# tzdata gives --time-zone its zones for tools that read /usr/share/zoneinfo. npm, corepack and
# yarn of the base image are not needed to run one bundled file: removed.
RUN apt-get update \
 && apt-get install -y --no-install-recommends util-linux tzdata \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /usr/local/bin/npm \
      /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \
 && groupadd --system --gid 65532 kured-ts \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin kured-ts
COPY --from=build /src/dist/cli.js /src/dist/cel-worker.js /src/dist/package.json /app/
COPY --from=build /src/dist/chunks /app/chunks
COPY LICENSE /app/LICENSE
ENV NODE_ENV=production
# Non-root by default; the Helm chart runs the agent as root only where the reboot method needs it.
USER 65532:65532
WORKDIR /app
EXPOSE 8080
ENTRYPOINT ["node", "/app/cli.js"]
