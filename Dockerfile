# EchoRelay container image.
#
#   docker build -t echorelay .
#   docker compose up            (see docker-compose.yml)
#
# Two stages: a full Swift toolchain builds a release binary with the Swift runtime
# linked in statically, and a plain Ubuntu image runs it, without any Swift toolchain.

# The toolchain the project is developed and tested with (Package.swift needs >= 6.2).
ARG SWIFT_VERSION=6.3

# ================================
# Build stage
# ================================
FROM swift:${SWIFT_VERSION}-noble AS build

WORKDIR /build

# Dependencies first, in their own layer: it is reused as long as Package.swift (and
# Package.resolved, if there is one; it is git-ignored, so a fresh clone has none) is
# unchanged, so editing Sources/ does not re-fetch every dependency.
COPY Package.* ./
RUN swift package resolve

# Sources/ and Schema/ are what the binary is built from (Schema/'s SQL migrations are
# embedded in it). Tests/ and the benchmark's HTTP floor are copied too although they are
# not built: the manifest declares their targets (with custom paths), and SwiftPM refuses to
# load a package whose target folders are missing.
COPY Sources ./Sources
COPY Schema ./Schema
COPY Tests ./Tests
COPY Benchmarks/http-floor ./Benchmarks/http-floor

# --static-swift-stdlib links the Swift runtime and Foundation into the binary, so the
# run stage needs only libc, libstdc++ and libgcc_s.
# swift-backtrace-static is the crash backtracer for statically linked programs: without
# it, a crash in production prints one line instead of a symbolicated backtrace.
RUN swift build -c release --product echorelay --static-swift-stdlib \
    && mkdir -p /staging \
    && cp "$(swift build -c release --show-bin-path)/echorelay" /staging/ \
    && cp /usr/libexec/swift/linux/swift-backtrace-static /staging/

# ================================
# Run stage
# ================================
FROM ubuntu:noble

# - ca-certificates: TLS to PostgreSQL (sslmode=require) and to the OAuth Echo provider.
# - tzdata: Foundation's TimeZone reads /usr/share/zoneinfo.
# - libstdc++6: the static Swift runtime still links libstdc++ dynamically (already in the
#   base image, as apt needs it; named so that nothing removes it).
# - curl: only for the container health check (GET /readyz), see docker-compose.yml.
# Not needed: libcurl4 / libxml2 (only for FoundationNetworking / FoundationXML, which
# EchoRelay does not import); OpenSSL (swift-crypto and swift-nio-ssl embed BoringSSL).
# Versions are not pinned: Ubuntu drops superseded versions from its archive, so pins
# break the build within weeks; dist-upgrade takes the current security fixes instead.
# hadolint ignore=DL3008
RUN export DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true \
    && apt-get -q update \
    && apt-get -q dist-upgrade -y \
    && apt-get -q install -y --no-install-recommends \
        ca-certificates \
        tzdata \
        libstdc++6 \
        curl \
    && rm -rf /var/lib/apt/lists/*

# An unprivileged user with a fixed numeric id (Kubernetes' runAsNonRoot can only
# check a numeric USER). Its home is the working directory, the one place it may write.
RUN groupadd --gid 10001 echorelay \
    && useradd --uid 10001 --gid echorelay --no-create-home \
        --home-dir /var/lib/echorelay --shell /usr/sbin/nologin echorelay \
    && install -d -o echorelay -g echorelay -m 0750 /var/lib/echorelay

# Owned by root and not writable by the echorelay user.
COPY --from=build /staging/echorelay /usr/local/bin/echorelay
COPY --from=build /staging/swift-backtrace-static /usr/local/libexec/swift/swift-backtrace-static

# A statically linked program looks for the backtracer relative to its own path, under a
# name this image does not use, so it is named here. sanitize=yes scrubs personal data
# from paths in crash reports; interactive=no because nobody is at the container's tty.
# Log lines carry local time: with TZ set, glibc reads the zone once instead of stat()ing
# /etc/localtime for every line.
ENV TZ=UTC
ENV SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/usr/local/libexec/swift/swift-backtrace-static

WORKDIR /var/lib/echorelay
USER 10001:10001

EXPOSE 8080

# `serve` stops gracefully on SIGTERM (Docker's default stop signal): in-flight requests
# finish first. --host 0.0.0.0 because the default, 127.0.0.1, is unreachable from
# outside the container; the port is ECHORELAY_PORT or 8080.
ENTRYPOINT ["/usr/local/bin/echorelay"]
CMD ["serve", "--host", "0.0.0.0"]
