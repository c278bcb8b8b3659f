#!/usr/bin/env bash
# The 30-minute soak beside CI (tests/integration/py/soak.py): 8 concurrent streams on the demo pair
# through the router, every reply compared with its solo run, RSS / threads / descriptors sampled
# every 10 s. MINUTES, STREAMS and NICE override; the JSON report goes to soak-report.json.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS="twinspan-drafter twinspan-target twinspan-router" scripts/build.sh >/dev/null
exec nice -n "${NICE:-0}" /usr/bin/python3 tests/integration/py/soak.py --bins "${BUILD_DIR:-build}" \
  --minutes "${MINUTES:-30}" --streams "${STREAMS:-8}" --sample 10 \
  --report "${REPORT:-soak-report.json}"
