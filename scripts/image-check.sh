#!/usr/bin/env bash
# The image checks beside CI (tests/integration/py/image_test.py, whose CI run builds the CPU image
# from build/'s binaries and checks the CUDA image of the same binaries without a GPU): here the
# whole test runs on the CUDA image (target, drafter and router from it on --device cpu, a request
# through the router), and --from-source compiles the image's binaries in its build stage, as a
# release does (on a shared 2-core machine the CPU image took 20 minutes; the CUDA image, SASS for
# five GPU architectures, about 3.5 times that: docs/deploy.md).
#   scripts/image-check.sh [cpu|cuda] [--from-source]      default: cuda, binaries of build/
# Without --from-source, build/ must have the CUDA backend for a CUDA image (configure it with
# scripts/test.sh's flags, or -DTWINSPAN_CUDA_ARCHS=all). JOBS caps the image build's compile jobs (default one per core), NICE its priority,
# TWINSPAN_CUDA_TOOLKIT the toolkit a CUDA compile stage takes (default /usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
target=cuda
from_source=0
for arg in "$@"; do
  case $arg in
    cpu|cuda) target=$arg ;;
    --from-source) from_source=1 ;;
    *) echo "image-check: unknown argument $arg (cpu|cuda, --from-source)" >&2; exit 2 ;;
  esac
done
build_dir=$(pwd)/${BUILD_DIR:-build}
if [ "$from_source" = 0 ]; then
  # The binaries the image takes; a CUDA image needs a build with the CUDA backend.
  TARGETS="twinspan-target twinspan-drafter twinspan-router twinspan-serve twinspan-probe make-demo" \
    scripts/build.sh >/dev/null
fi
exec env TWINSPAN_IMAGE_TARGET="$target" TWINSPAN_IMAGE_FROM_SOURCE="$from_source" \
  TWINSPAN_BUILD_DIR="$build_dir" TWINSPAN_SOURCE_DIR="$(pwd)" TWINSPAN_PROTO_DIR="$(pwd)/proto" \
  nice -n "${NICE:-0}" /usr/bin/python3 tests/integration/py/image_test.py
