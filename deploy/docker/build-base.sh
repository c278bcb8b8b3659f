#!/usr/bin/env bash
# Builds the Debian 12 base image the Dockerfile starts FROM out of Debian's packages alone
# (mmdebstrap, minbase variant: apt and dpkg, no docs or man pages) and imports it into podman.
#   deploy/docker/build-base.sh [IMAGE]     default IMAGE: localhost/twinspan/debian:bookworm
# The packages come from this machine's apt sources; DEBIAN_MIRROR overrides them.
set -euo pipefail
image=${1:-localhost/twinspan/debian:bookworm}
for tool in mmdebstrap podman; do
  command -v "$tool" >/dev/null || { echo "build-base: $tool is missing (apt-get install $tool)" >&2; exit 1; }
done
sources=${DEBIAN_MIRROR:-}
if [ -z "$sources" ]; then
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    if [ -s "$f" ]; then sources=$f; break; fi
  done
fi
hooks=()
# dpkg's fsyncs are most of the time on a small machine; the image is committed whole anyway.
[ -d /usr/share/mmdebstrap/hooks/eatmydata ] && hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata)
echo "build-base: mmdebstrap bookworm (minbase) from ${sources:-the default Debian mirror} -> $image" >&2
mmdebstrap --variant=minbase --mode=root --format=tar --quiet "${hooks[@]}" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --aptopt='APT::Install-Recommends "false"' \
  bookworm - ${sources:+"$sources"} |
  podman import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' \
    --message "Debian 12 minbase from mmdebstrap" - "$image" >/dev/null
echo "build-base: $image $(podman image inspect --format '{{.Size}}' "$image") bytes" >&2
