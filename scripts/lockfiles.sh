#!/usr/bin/env bash
# Lists the non-test Go files of redlock and its packages that one default
# Lock and its Unlock run, and counts them: how many files a reader must
# read to follow one lock. It builds scripts/lockfiles with coverage of
# dlm/redlock/... (go build -cover -covermode=atomic), which starts five
# redis-server processes on free loopback ports, dials a client with
# rueidis.Dial and no options, locks and unlocks one key to open the
# connections, clears the counters, then locks and unlocks another key and
# writes them; a file counts when one of its statements ran.
#
#   scripts/lockfiles.sh         a Lock and Unlock of a client whose connections are open
#   scripts/lockfiles.sh -cold   the first Lock and Unlock of a fresh client (connections, node checks)
#
# Needs redis-server on PATH. Prints one file a line, then the count.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -cover -covermode=atomic -coverpkg=dlm/redlock/...,dlm/scripts/lockfiles -o "$tmp/lockfiles" ./scripts/lockfiles
mkdir "$tmp/counters" "$tmp/atexit"
GOCOVERDIR="$tmp/atexit" "$tmp/lockfiles" -out "$tmp/counters" "$@"
go tool covdata textfmt -i "$tmp/counters" -o "$tmp/profile.txt"
# A profile line is file:start,end statements count; keep files with a count.
awk 'NR > 1 && $NF > 0 { split($1, a, ":"); print a[1] }' "$tmp/profile.txt" |
  grep -v '^dlm/scripts/' | sed 's|^dlm/||' | sort -u >"$tmp/files"
cat "$tmp/files"
echo "$(wc -l <"$tmp/files") files"
