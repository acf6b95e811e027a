# hookledger's production image: compiled JavaScript on a current Node LTS, run as a non-root user.
# Build: docker build -t hookledger .   Run: docker run hookledger ingest   (or: topics, process, …)
FROM node:24-bookworm-slim AS build
# The Kafka client (librdkafka) is built here when its prebuilt binary cannot be downloaded; linked
# against Debian's OpenSSL, zlib and libcurl (OAUTHBEARER's OIDC token fetch), which the runtime image
# has as shared libraries.
RUN apt-get update && apt-get install -y --no-install-recommends g++ make python3 libssl-dev zlib1g-dev \
  libcurl4-openssl-dev \
  && rm -rf /var/lib/apt/lists/*
ENV CKJS_LINKING=dynamic
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY runtime runtime
COPY schemas schemas
COPY ingest ingest
COPY processors processors
COPY tools tools
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libssl3 zlib1g libcurl4 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 8080
ENTRYPOINT ["node", "dist/tools/cli/main.js"]
CMD ["ingest"]
