# syntax=docker/dockerfile:1
#
# One image with every skillbus binary: registry, seqworker, skillface and
# skillbus (the command line, `skillbus tools serve`, `skillbus mcp`). The
# container's command picks the service:
#
#   docker build -t skillbus:dev .
#   docker run --rm skillbus:dev skillbus --version
#   docker run --rm -e NATS_URL=nats://host:4222 skillbus:dev seqworker
#
# Build arguments: VERSION (the release, stamped into every binary's
# --version), REVISION (the git commit, an OCI label). Multi-platform builds
# (docker buildx build --platform linux/amd64,linux/arm64 .) cross-compile
# on the build machine. See docs/deploy.md.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=0.0.0-dev
WORKDIR /src
# Modules first: this layer stays cached until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static binaries: no cgo, no paths of the build machine, symbols stripped.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/skillbus/skillbus/internal/version.Version=${VERSION}" \
      -o /out/ ./cmd/registry ./cmd/seqworker ./cmd/skillface ./cmd/skillbus

# distroless static: CA certificates, tzdata, /etc/passwd with the nonroot
# user (65532), no shell and no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=0.0.0-dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="skillbus" \
      org.opencontainers.image.description="Skills and tool sequences for AI agent runtimes, as workers on NATS JetStream: registry, seqworker, skillface and the skillbus command" \
      org.opencontainers.image.source="https://github.com/skillbus/skillbus" \
      org.opencontainers.image.documentation="https://github.com/skillbus/skillbus/blob/main/docs/deploy.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="gcr.io/distroless/static-debian12:nonroot"
COPY --from=build /out/registry /out/seqworker /out/skillface /out/skillbus /usr/local/bin/
USER 65532:65532
WORKDIR /home/nonroot
# No ENTRYPOINT: the command names the service (Kubernetes `command`).
CMD ["/usr/local/bin/skillbus", "help"]
