#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time ($1, default 5s).
set -euo pipefail
fuzztime=${1:-5s}
cd "$(dirname "$0")/.."
status=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "fuzz ./$dir $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir" || status=1
  done
done < <(grep -rl --include='*_test.go' -E '^func Fuzz' . | grep -v node_modules | sort)
exit $status
