# The simulator's stand-in for an lmsysorg/sglang image: same source layout, same entry point.
#
# `python3 -m sglang.launch_server <argv>` starts repro's simulator from a shim package at
# /sgl-workspace/sglang/python/sglang, a git checkout like the real image's, so that
# Dockerfile.sglang applies patches to it exactly as it does on a GPU image.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY sglang/ /sgl-workspace/sglang/
COPY repro/ /opt/repro/python/repro/
ENV PYTHONPATH=/sgl-workspace/sglang/python:/opt/repro/python \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN cd /sgl-workspace/sglang \
    && git init --quiet \
    && git add --all \
    && GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z \
       git -c user.name=repro -c user.email=repro@localhost commit --quiet \
           -m "SGLang source layout for the repro simulator"
WORKDIR /sgl-workspace
