# A small static image: the binary built against musl, on an empty base, running as non-root.
#   docker build -t descheduler:0.1.0 .
FROM rust:1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools && rm -rf /var/lib/apt/lists/*
RUN rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
COPY benches ./benches
COPY examples ./examples
RUN cargo build --release --locked --target x86_64-unknown-linux-musl --bin descheduler \
    && cp target/x86_64-unknown-linux-musl/release/descheduler /descheduler

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# Where upstream's image has its binary: upstream's chart and manifests name it as their
# command, so they run this image unchanged.
COPY --from=build /descheduler /bin/descheduler
USER 65532:65532
ENTRYPOINT ["/bin/descheduler"]
