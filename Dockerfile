# hookledger's production image: compiled JavaScript on a current Node LTS, run as a non-root user.
# Build: docker build -t hookledger .   Run: docker run hookledger ingest   (or: topics, process, …)
# The base image is pinned by digest (node 24.18.0 on Debian bookworm, slim), so a rebuild gets the
# same bytes; update both together: `docker buildx imagetools inspect node:24-bookworm-slim`.
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
FROM ${NODE_IMAGE} AS build
# The Kafka client (librdkafka) is built here when its prebuilt binary cannot be downloaded; linked
# against Debian's OpenSSL, zlib and libcurl (OAUTHBEARER's OIDC token fetch), which the runtime image
# has as shared libraries.
RUN apt-get update && apt-get install -y --no-install-recommends g++ make python3 patch libssl-dev zlib1g-dev \
  libcurl4-openssl-dev \
  && rm -rf /var/lib/apt/lists/*
ENV CKJS_LINKING=dynamic
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci's postinstall patches the client's binding (its message conversion) and rebuilds it.
COPY tools/build tools/build
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY runtime runtime
COPY schemas schemas
COPY ingest ingest
COPY processors processors
COPY tools tools
# What ships is what runs: no dev tools (tsx, the test and lint tools), and not the optional package the
# CLI uses on a developer's machine only (testcontainers, for a Docker stack).
RUN npm run build && npm prune --omit=dev --omit=optional

FROM ${NODE_IMAGE}
# jemalloc as every process's allocator, as tools/cli/hookledger sets it outside the image: the Kafka
# client's binding allocates a buffer per record that librdkafka's threads free, which glibc's malloc
# does slowly (the router 10 % less CPU per event, docs/scaling.md "The allocator"). Linked to one
# path whatever the architecture's library directory. HOOKLEDGER_MALLOC does not apply in the image:
# unset LD_PRELOAD (`-e LD_PRELOAD=`) for the C library's malloc.
RUN apt-get update && apt-get install -y --no-install-recommends libssl3 zlib1g libcurl4 libjemalloc2 \
  && rm -rf /var/lib/apt/lists/* \
  && ln -s "$(find /usr/lib -name libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2 \
  && test -r /usr/local/lib/libjemalloc.so.2
ENV NODE_ENV=production
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
# 8080: webhooks. The ops port (INGEST_OPS_PORT 9091: /healthz, /readyz, /metrics) listens on the
# loopback unless INGEST_OPS_HOST says otherwise (in Kubernetes: 0.0.0.0, with no Ingress route to it).
EXPOSE 8080
ENTRYPOINT ["node", "dist/tools/cli/main.js"]
CMD ["ingest"]
