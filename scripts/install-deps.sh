#!/usr/bin/env bash
# Installs every Debian package Twinspan needs to build, test and run (Debian 12; run as root or with sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libpcre2-dev libutf8proc-dev libssl-dev libboost-dev openssl curl libcivetweb-dev
  libgtest-dev libgmock-dev libbenchmark-dev prometheus-cpp-dev
  clang-14 libclang-rt-14-dev clang-format clang-tidy cppcheck
  prometheus
  podman runc mmdebstrap eatmydata
  nodejs npm
  python3 python3-numpy python3-grpcio python3-grpc-tools python3-jinja2 python3-matplotlib python3-yaml
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The machine image may ship its own Node.js; only install Debian's when there is none.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
