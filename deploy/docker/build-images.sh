#!/usr/bin/env bash
# Builds Twinspan's images with podman from deploy/docker/Dockerfile, on the Debian base that
# build-base.sh makes when it is missing.
#   deploy/docker/build-images.sh [--target cpu|cuda] [--tag IMAGE] [--prebuilt BUILD_DIR]
#                                 [--base IMAGE] [--cuda-toolkit DIR]
# --prebuilt takes the binaries from a build tree of this checkout (same Debian 12 packages)
# instead of compiling them in the image: the compile stage is replaced, the runtime stage is the
# same. JOBS limits the compile stage's parallel jobs (default: one per core). Extra podman build
# flags go in PODMAN_BUILD_FLAGS (for example --isolation chroot).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
target=cpu
tag=
prebuilt=
base=localhost/twinspan/debian:bookworm
toolkit=/usr/local/cuda
while [ $# -gt 0 ]; do
  case $1 in
    --target) target=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --cuda-toolkit) toolkit=$2; shift 2 ;;
    *) echo "build-images: unknown argument $1" >&2; exit 2 ;;
  esac
done
case $target in cpu|cuda) ;; *) echo "build-images: --target is cpu or cuda, not $target" >&2; exit 2 ;; esac
tag=${tag:-localhost/twinspan:$target}
if ! podman image exists "$base"; then
  "$repo/deploy/docker/build-base.sh" "$base"
fi
build_opts=()
[ -z "${JOBS:-}" ] || build_opts+=(--build-arg "JOBS=$JOBS")
staging=
cleanup() { [ -z "$staging" ] || rm -rf "$staging"; }
trap cleanup EXIT
if [ -n "$prebuilt" ]; then
  staging=$(mktemp -d)
  mkdir "$staging/out"
  for b in twinspan-target twinspan-drafter twinspan-router twinspan-serve twinspan-probe make-demo; do
    [ -x "$prebuilt/$b" ] || { echo "build-images: $prebuilt/$b is missing; build it first" >&2; exit 1; }
    # Line tables are for tests, not for an image.
    strip -o "$staging/out/$b" "$prebuilt/$b"
  done
  stage=build
  if [ "$target" = cuda ]; then
    stage=build-cuda
    [ -f "$prebuilt/kernels/cuda/libtwinspan_cuda.a" ] || {
      echo "build-images: $prebuilt has no CUDA backend (no nvcc at configure time?); a CUDA image needs one" >&2
      exit 1
    }
  fi
  build_opts+=(--build-context "$stage=$staging")
elif [ "$target" = cuda ]; then
  [ -x "$toolkit/bin/nvcc" ] || { echo "build-images: no nvcc under $toolkit (--cuda-toolkit DIR)" >&2; exit 1; }
  # podman takes the folder, not a link to it (/usr/local/cuda -> cuda-13.0).
  build_opts+=(--build-context "cuda-toolkit=$(readlink -f "$toolkit")")
fi
# shellcheck disable=SC2086
podman build --network=host --format docker --target "$target" --build-arg "BASE_IMAGE=$base" \
  "${build_opts[@]}" ${PODMAN_BUILD_FLAGS:-} -f "$repo/deploy/docker/Dockerfile" -t "$tag" "$repo"
echo "build-images: $tag $(podman image inspect --format '{{.Size}}' "$tag") bytes" >&2
