# The ember image: `ember` as entrypoint, any role (ember scheduler|server|train|status|...), and
# deploy/ember-pod.sh for the Kubernetes manifests of deploy/.
#
#   docker build -t ember .
#   docker run --rm ember --help
#
# Both stages run scripts/container-build.sh, which CI also runs outside a container.
FROM debian:bookworm AS build
WORKDIR /src
COPY . .
# setup.sh installs the build packages and builds into /src/build; the binary only.
RUN EMBER_CMAKE_ARGS="-DEMBER_BUILD_TESTS=OFF -DEMBER_PYTHON=OFF -DEMBER_WITH_CUDA=OFF" \
    scripts/container-build.sh build /src/build /opt/ember

FROM debian:bookworm
COPY --from=build /opt/ember /opt/ember
COPY scripts/container-build.sh /opt/ember/share/ember/container-build.sh
# Only the Debian packages owning the libraries the binary loads (share/ember/runtime-packages).
RUN /opt/ember/share/ember/container-build.sh runtime /opt/ember \
    && groupadd --gid 10001 ember && useradd --uid 10001 --gid ember --no-create-home ember \
    && mkdir -p /var/lib/ember && chown ember:ember /var/lib/ember
ENV PATH=/opt/ember/bin:$PATH
USER ember
WORKDIR /var/lib/ember
ENTRYPOINT ["ember"]
CMD ["--help"]
