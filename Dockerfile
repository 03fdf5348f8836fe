# The engine for a cluster: `jobmachine run --in-cluster` (see deploy/ and docs/operations.md).
FROM python:3.12-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY machines ./machines
COPY kinds ./kinds
COPY crds ./crds
RUN pip install --no-cache-dir . && useradd --uid 65532 --no-create-home jobmachine
USER 65532
ENTRYPOINT ["jobmachine"]
CMD ["run", "--in-cluster"]
