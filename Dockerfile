# phalanx in a container: Debian 12, the repository's own dependency script (--node: what the
# build and the node need, nothing for tests), a Release build without CUDA, and a slim image
# with the binary on PATH, its shared libraries and Debian's Fashion-MNIST. `phalanx k8s --image`
# runs it; docs/GUIDE.md "Containers" says how to build and push it.
#   docker build -t REGISTRY/phalanx:TAG . && docker push REGISTRY/phalanx:TAG
# tests/tools/dockerfile_test.cc checks every command here against the repository (no registry
# for base images is reachable where the tests run).

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src/phalanx
COPY . .
RUN ./tools/install-deps --node
RUN cmake -S . -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPHALANX_CUDA=OFF \
      -DPHALANX_PYTHON=OFF -DPHALANX_BUILD_TESTS=OFF \
    && cmake --build /tmp/build --target phalanx \
    && cmake --install /tmp/build --prefix /usr/local

FROM debian:12-slim
ENV DEBIAN_FRONTEND=noninteractive
# The shared libraries `phalanx` links (the test compares them with the built binary's).
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends \
      libssl3 libprotobuf32 libspdlog1.10 libfmt9 libyaml-cpp0.7 libcpp-httplib0.11 \
      libbrotli1 zlib1g libgomp1 libbenchmark1debian libjemalloc2 dataset-fashion-mnist \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/phalanx /usr/local/bin/phalanx
# Not root: a peer reads what an attacker sends. The k8s manifests give the volume this group.
RUN useradd --uid 10001 --user-group --create-home phalanx \
    && mkdir -p /var/lib/phalanx && chown phalanx:phalanx /var/lib/phalanx
USER 10001:10001
WORKDIR /var/lib/phalanx
ENTRYPOINT ["phalanx"]
CMD ["--help"]
