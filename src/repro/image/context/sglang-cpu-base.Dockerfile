# The CPU engine's base: SGLang's own engine on Debian 12's Python, made without a registry.
#
# Built by repro (src/repro/image/cpu_base.py) on its mmdebstrap base. The build has no
# network: every wheel was downloaded by the host from the package registry into the context.
# Dockerfile.sglang then adds the patch series and the manifest on top, as on a GPU image.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}

# Layer 1, heavy and cached: SGLang and its pinned dependencies, from the context's wheels
# (bind-mounted, so the wheels themselves take no space in the image).
ARG PYTHON_VERSION
RUN --mount=type=bind,source=wheels,target=/tmp/wheels \
    python3 -m venv --without-pip /opt/sglang \
    && /opt/sglang/bin/python3 "$(ls /tmp/wheels/pip-*.whl)/pip" install --quiet --no-index \
         --no-deps --no-cache-dir --find-links /tmp/wheels -r /tmp/wheels/requirements.txt
COPY wheels.json /opt/repro/wheels.json

# Layer 2, the CPU-test layer: import stand-ins for what PyPI has no CPU build of (sgl_kernel,
# torchvision, cutlass), loaded by its sitecustomize.py in every Python process (SGLang's
# scheduler and detokenizer too), after the installed packages: a real build always wins.
# First on the path, so it, not Debian's own sitecustomize.py, is the one Python imports.
COPY cpu-test-layer/ /opt/repro/cpu-test-layer/
ENV PYTHONPATH=/opt/repro/cpu-test-layer
LABEL dev.repro.cpu-test-layer="/opt/repro/cpu-test-layer: import stand-ins, not SGLang's"

# The source layout Dockerfile.sglang patches (SGLang's python/sglang, here the installed one).
RUN mkdir -p /sgl-workspace/sglang/python \
    && ln -s "/opt/sglang/lib/python${PYTHON_VERSION}/site-packages/sglang" \
         /sgl-workspace/sglang/python/sglang
ENV PATH=/opt/sglang/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1
WORKDIR /sgl-workspace
