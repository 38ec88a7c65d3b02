"""Container images: the registry-free base images, Dockerfile.sglang builds, registry I/O."""
