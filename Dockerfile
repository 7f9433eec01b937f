# inferd container image: build with the project's own scripts on the Swift image, run on
# bookworm-slim with only the runtime libraries, as a non-root user.
#
#   docker build -t inferd .
#   docker run -p 8080:8080 -v inferd-data:/data inferd
#
# The model is fetched at build time by scripts/fetch-model.sh (the same script `make serve`
# uses); to use another model, mount it and set INFERD_MODEL.

FROM swift:6.3-bookworm AS build
WORKDIR /src
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip >/dev/null
COPY scripts/ scripts/
RUN ./scripts/install-deps.sh && ./scripts/fetch-model.sh
COPY Package.swift ./
COPY Sources/ Sources/
COPY Tests/ Tests/
RUN swift build -c release --static-swift-stdlib --product inferd \
    && install -D "$(swift build -c release --static-swift-stdlib --show-bin-path)/inferd" /out/inferd

FROM debian:bookworm-slim
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libmicrohttpd12 libgnutls30 libsqlite3-0 libpq5 libcurl4 libstdc++6 ca-certificates >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin inferd \
    && mkdir -p /data /models && chown inferd /data
COPY --from=build /out/inferd /usr/local/bin/inferd
COPY --from=build /src/models/SmolLM2-135M-Instruct.Q4_1.gguf /models/
COPY config/inferd.json /etc/inferd/inferd.json
ENV INFERD_HOST=0.0.0.0 \
    INFERD_PORT=8080 \
    INFERD_MODEL=/models/SmolLM2-135M-Instruct.Q4_1.gguf \
    INFERD_DATA_DIR=/data \
    INFERD_CONFIG=/etc/inferd/inferd.json
USER inferd
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=4s --start-period=20s --retries=3 CMD ["inferd", "healthcheck"]
# SIGTERM starts the drain: in-flight requests get drain_seconds, then are cancelled (reason shutdown).
STOPSIGNAL SIGTERM
ENTRYPOINT ["inferd"]
CMD ["serve"]
