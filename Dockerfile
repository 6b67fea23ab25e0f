# syntax=docker/dockerfile:1
# Latchkey: one image for the service and for `npm run migrate` (deploy/compose.yaml runs both).
#   docker build -t latchkey .
#   docker run -p 8080:8080 -p 1884:1884 -v latchkey-data:/data -e PUBLIC_URL=https://doors.example.com latchkey
# The service runs from an esbuild bundle of src/main.ts (scripts/server-bundle.mjs), built here by the launcher
# that `npm start` runs; `npm run migrate` runs src/migrate.ts through tsx. Both are runtime dependencies: no dev
# dependency is needed.

FROM node:20-slim AS dependencies
WORKDIR /app
# The workspaces' manifests come with the lock file: npm ci installs them with the root.
COPY package.json package-lock.json ./
COPY packages/cli/package.json packages/cli/
COPY packages/sdk/package.json packages/sdk/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:20-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    MQTT_PORT=1884 \
    DATA_DIR=/data \
    LOG_FORMAT=json
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY packages ./packages
COPY src ./src
COPY scripts/start.mjs scripts/server-bundle.mjs ./scripts/
# The operator's commands (README "From embedded to PostgreSQL", "Lost the operator token?"), run through tsx:
#   docker run --rm -v latchkey-data:/data -e DATABASE_URL=… latchkey npm run move-to-postgres
COPY scripts/move-to-postgres.ts scripts/operator-token.ts ./scripts/
# The bundle (.cache/server), built once here: the service starts without building, and without tsx. The build
# also makes the embedded database's migrated template (.cache/pglite, copied by a first start), which the
# service's user must be able to read: made by root, its cluster files are 0600.
RUN node scripts/start.mjs --build && chown -R node:node .cache/pglite
# The embedded database and the generated secrets (unused with DATABASE_URL); owned by the image's
# unprivileged user, which the service runs as.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# HTTP, and the embedded MQTT broker (unused with MQTT_URL).
EXPOSE 8080 1884
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# package.json's "start", without npm in between: SIGTERM reaches the service, which shuts down gracefully.
CMD ["node", "--v8-pool-size=1", "--max-semi-space-size=8", "scripts/start.mjs"]
