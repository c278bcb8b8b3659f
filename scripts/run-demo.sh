#!/usr/bin/env bash
# The main job on the embedded demo model: install, build, start the services on loopback,
# answer one request, stop everything. Each stage says plainly what ran.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
echo "run-demo: the services are not built yet; the build and its tests are what exists (scripts/test.sh)."
