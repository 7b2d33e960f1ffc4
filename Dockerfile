# syntax=docker/dockerfile:1
# belfry: build on Debian 12 with the distribution's libraries, run on a slim
# image with only their runtime packages.
#   docker build -t belfry:dev .
#   docker run --rm belfry:dev version

############################ build ############################
FROM debian:bookworm AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libpqxx-dev libpq-dev librdkafka-dev libyaml-cpp-dev libspdlog-dev libfmt-dev \
      libcli11-dev nlohmann-json3-dev libsimdjson-dev prometheus-cpp-dev libcpp-httplib-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Only what the binary needs (tests and benchmarks are off), so that local
# build/ and .local/ trees never enter the image.
COPY CMakeLists.txt ./
COPY include/ include/
COPY src/ src/
COPY migrations/ migrations/
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBELFRY_BUILD_TESTS=OFF -DBELFRY_BUILD_BENCH=OFF -DBELFRY_BUILD_FUZZ=OFF \
 && cmake --build build --target belfry -j"$(nproc)" \
 && strip build/belfry

############################ runtime ############################
FROM debian:bookworm-slim AS runtime
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libpqxx-6.4 librdkafka++1 libyaml-cpp0.7 libspdlog1.10 libfmt9 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libcpp-httplib0.11 libsimdjson14 \
      ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin belfry

COPY --from=build /src/build/belfry /usr/local/bin/belfry
COPY --from=build /src/migrations/ /usr/share/belfry/migrations/
# Fail the image build if a shared library is missing from the list above.
RUN if ldd /usr/local/bin/belfry | grep 'not found'; then exit 1; fi

USER belfry
# belfry looks for ./migrations, then /usr/share/belfry/migrations.
WORKDIR /usr/share/belfry
EXPOSE 8080
ENTRYPOINT ["belfry"]
CMD ["serve"]
