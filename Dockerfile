# syntax=docker/dockerfile:1
# The flexjob image: the operator, implicit job masters, agents, server, brain and allocator
# all run `python -m flexjob ...` from it (see deploy/ and `flexjob manifests install`).
#   docker build -t flexjob:latest .                                  # CPU torch (default)
#   docker build --build-arg TORCH_VARIANT=cu128 -t flexjob:latest-cu128 .   # CUDA torch
# Packages: torch at the version constraints.txt pins for this checkout, from PyTorch's index
# for TORCH_VARIANT, then this project with its declared runtime dependencies and the extras in
# EXTRAS (tests/test_dockerfile.py checks it).
# The examples are included so that examples/specs/*.yaml run as they are.
ARG PYTHON_VERSION=3.11
FROM python:${PYTHON_VERSION}-slim

ARG TORCH_VERSION=2.13.0
ARG TORCH_VARIANT=cpu
# The pyproject extras the components need: the agents (torch: the one installed above), the
# operator and allocator (kubernetes), the HTTP server, the brain (with PostgreSQL's driver)
# and the examples' data.
ARG EXTRAS=torch,kubernetes,server,brain,examples
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/flexjob
RUN pip install --index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}" \
        "torch==${TORCH_VERSION}"
COPY pyproject.toml README.md ./
COPY flexjob ./flexjob
RUN pip install ".[${EXTRAS}]"
COPY examples ./examples

RUN groupadd --system --gid 10001 flexjob \
    && useradd --system --uid 10001 --gid flexjob --home-dir /home/flexjob --create-home flexjob
# Numeric, so that Kubernetes can enforce runAsNonRoot (the operator Deployment sets it).
USER 10001:10001
ENV HOME=/home/flexjob
ENTRYPOINT ["python", "-m", "flexjob"]
CMD ["--help"]
