#!/usr/bin/env bash
# lint.sh [BASE]: clang-format, clang-tidy and cppcheck over the C++/CUDA files changed since BASE
# (default: origin of the working tree, HEAD~1), using build/compile_commands.json for the flags.
# Prints each tool's findings and exits non-zero when any tool reports one.
set -uo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~1}
build=${BUILD_DIR:-build}
mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- '*.cc' '*.h' '*.cu' '*.cuh')
if [ ${#files[@]} -eq 0 ]; then
  echo "lint: no C++/CUDA files changed since $base"
  exit 0
fi
status=0

echo "== clang-format (${#files[@]} files)"
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" 2>&1 | head -5 || true
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || status=1
done

# clang-tidy and cppcheck read the compile database, which lists translation units only.
mapfile -t units < <(printf '%s\n' "${files[@]}" | grep -E '\.cc$')
if [ ${#units[@]} -gt 0 ] && [ -f "$build/compile_commands.json" ]; then
  echo "== clang-tidy (${#units[@]} units)"
  out=$(clang-tidy -p "$build" --quiet "${units[@]}" 2>/dev/null | grep -E 'warning:|error:')
  if [ -n "$out" ]; then
    echo "$out"
    status=1
  fi
  echo "== cppcheck"
  out=$(cppcheck --enable=warning,performance,portability --inline-suppr -q --std=c++20 \
    --suppress=syntaxError --suppress=preprocessorErrorDirective -I . "${units[@]}" 2>&1)
  if [ -n "$out" ]; then
    echo "$out"
    status=1
  fi
else
  echo "lint: no compile database at $build (configure first) or no .cc files: tidy/cppcheck skipped"
fi
exit $status
