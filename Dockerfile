# The engine for a cluster: `jobmachine run --in-cluster` (see deploy/ and docs/operations.md).
#
# BASE_IMAGE stands in for the FROM image: any Debian-like image with python3 (3.11 or
# newer) and its venv module. Without a registry, build one with debootstrap and pass it
# in: --build-arg BASE_IMAGE=localhost/jobmachine-base:bookworm (tools/build-image.sh).
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}
WORKDIR /app
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY machines ./machines
COPY kinds ./kinds
COPY crds ./crds
# A virtual environment, because Debian's own python3 refuses system-wide installs (PEP 668).
# The optional build secret pip-cert is a CA bundle for pip where TLS is intercepted
# (--secret id=pip-cert,src=/etc/ssl/certs/ca-certificates.crt); the image does not keep it.
RUN --mount=type=secret,id=pip-cert \
    if [ -f /run/secrets/pip-cert ]; then export PIP_CERT=/run/secrets/pip-cert; fi \
    && python3 -m venv /opt/jobmachine \
    && /opt/jobmachine/bin/pip install --no-cache-dir --disable-pip-version-check . \
    && rm -rf build jobmachine.egg-info \
    && groupadd --gid 65532 jobmachine \
    && useradd --uid 65532 --gid 65532 --no-create-home jobmachine
ENV PATH=/opt/jobmachine/bin:$PATH
USER 65532:65532
ENTRYPOINT ["/opt/jobmachine/bin/jobmachine"]
CMD ["run", "--in-cluster"]
