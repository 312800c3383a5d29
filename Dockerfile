# The ember image: `ember` as entrypoint, any role (ember scheduler|server|train|status|...), and
# deploy/ember-pod.sh for the Kubernetes manifests of deploy/.
#
#   scripts/container-image.sh [--prebuilt BUILD_DIR] [--tag TAG]   (podman; see docs/operations.md)
#   docker build -t ember .
#
# EMBER_PREFIX picks where /opt/ember comes from: `source` builds it here (scripts/container-build.sh
# build, which CI also runs outside a container); `prebuilt` takes an installed prefix from the
# context's prefix/ folder (container-image.sh --prebuilt fills it from an existing build). podman
# (buildah) picks the stages to build before it applies an ARG's default, so it needs
# --build-arg EMBER_PREFIX=... given explicitly; container-image.sh does that.
ARG EMBER_PREFIX=source

FROM debian:bookworm AS source
WORKDIR /src
COPY . .
# setup.sh installs the build packages and builds into /src/build; the binary only.
RUN EMBER_PACKAGES=binary EMBER_CMAKE_ARGS="-DEMBER_BUILD_TESTS=OFF -DEMBER_PYTHON=OFF -DEMBER_WITH_CUDA=OFF" \
    scripts/container-build.sh build /src/build /opt/ember

FROM scratch AS prebuilt
COPY prefix/ /opt/ember/

FROM ${EMBER_PREFIX} AS prefix

FROM debian:bookworm
COPY --from=prefix /opt/ember /opt/ember
COPY scripts/container-build.sh /opt/ember/share/ember/container-build.sh
# Only the Debian packages owning the libraries the binary loads (share/ember/runtime-packages).
RUN /opt/ember/share/ember/container-build.sh runtime /opt/ember \
    && groupadd --gid 10001 ember && useradd --uid 10001 --gid ember --no-create-home ember \
    && mkdir -p /var/lib/ember && chown ember:ember /var/lib/ember
ENV PATH=/opt/ember/bin:$PATH
# Libraries the build linked that no Debian package has (container-build.sh install copies them).
ENV LD_LIBRARY_PATH=/opt/ember/lib
USER ember
WORKDIR /var/lib/ember
ENTRYPOINT ["ember"]
CMD ["--help"]
