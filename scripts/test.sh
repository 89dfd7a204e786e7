#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need
# (redis-server, faketime) from Debian's packages when they are missing and
# this runs as root; otherwise says exactly what to install. Then go vet and
# go test -race on every package, with real redis-server processes required.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing ${missing[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "test.sh: missing ${missing[*]}. Install with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
# The report test loads a page in headless Chromium. Installed when root (a
# large package: a failure to install is reported, and the browser test then
# skips loudly instead of failing).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test.sh: installing chromium from Debian's packages (for the report page test)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } ||
    echo "test.sh: WARNING: could not install chromium; the browser test will be skipped" >&2
fi
if command -v chromium >/dev/null 2>&1; then
  export DLM_REQUIRE_BROWSER=1
else
  echo "test.sh: WARNING: no chromium; the report page is not checked in a browser (apt-get install -y chromium)" >&2
  export DLM_REQUIRE_BROWSER=0
fi
# Tests start their own redis-server processes; a system one is not needed.
if command -v systemctl >/dev/null 2>&1; then systemctl stop redis-server >/dev/null 2>&1 || true; fi

# staticcheck, pinned, from the Go module proxy when it is not installed.
staticcheck_version=v0.8.2 # staticcheck 2026.2.2
staticcheck="$(command -v staticcheck || true)"
if [ -z "$staticcheck" ]; then
  bindir="$(go env GOBIN)"
  [ -n "$bindir" ] || bindir="$(go env GOPATH)/bin"
  staticcheck="$bindir/staticcheck"
  if [ ! -x "$staticcheck" ]; then
    echo "test.sh: installing staticcheck $staticcheck_version (go install)"
    go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
  fi
fi

# The tests run on Go 1.27 or newer. Go 1.26's race detector crashes now
# and then when goroutines of one synctest bubble fire timers at once
# (internal/gotoolchain reproduces it in a second), which lost a whole test
# binary in a fresh-clone run. An older Go fetches go1.27.3 from the Go
# module proxy for the tests (76 MB, once per machine). go vet and
# staticcheck still run on the machine's own Go, which checks that the
# module builds on the Go its go.mod names.
# (A GOTOOLCHAIN set in the environment counts: GOVERSION is the Go that
# the go command runs.)
tests_go=go1.27.3
tests_env=()
machine_go=$(go env GOVERSION)
machine_minor=$(printf '%s\n' "$machine_go" | sed -n 's/^go1\.\([0-9][0-9]*\).*/\1/p')
if [ -n "$machine_minor" ] && [ "$machine_minor" -lt 27 ]; then
  echo "test.sh: the tests run on $tests_go ($machine_go's race detector crashes on synctest timers)"
  if ! GOTOOLCHAIN=$tests_go go version >/dev/null; then
    echo "test.sh: could not fetch $tests_go from the Go module proxy. Install Go 1.27 or newer" >&2
    echo "  (https://go.dev/dl/), or let the go command reach the module proxy (GOPROXY)." >&2
    exit 1
  fi
  tests_env=(GOTOOLCHAIN="$tests_go")
fi

export DLM_REQUIRE_REDIS=1
# go vet and staticcheck run beside the tests, at low priority: they only
# compute, while the tests mostly wait, so the checks take the CPU the
# tests leave idle instead of minutes before them. Their output is printed
# when both have ended; a finding fails the run as before.
# They run in a process group of their own, so that they can be given the
# normal priority once the tests end (as root) and are stopped with this
# script.
checks_log=$(mktemp)
echo "== go vet ./... and staticcheck ./..., beside the tests at low priority (${SECONDS}s into test.sh)"
setsid -w nice -n 15 bash -c 'go vet ./... && echo "== staticcheck ./..." && "$1" ./...' check "$staticcheck" >"$checks_log" 2>&1 &
checks=$!
trap 'kill -- -"$checks" 2>/dev/null || true; rm -f "$checks_log"' EXIT
echo "== go test -race ./... (${SECONDS}s)"
# The longest packages first (cmd/dlm, then redlock), so that they do not
# start last and run alone; and one package more at once than the CPUs:
# most packages wait on redis-server, dlm processes, ttls and rounds more
# than they compute (at -p 2 on 2 CPUs the tests used 338 s of CPU in
# 616 s: about a quarter of the two CPUs).
pkgs=$(go list ./...)
first="dlm/cmd/dlm dlm/redlock"
procs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
tests_rc=0
env "${tests_env[@]}" go test -race -count=1 -timeout 15m -p $((procs + 1)) $first $(printf '%s\n' $pkgs | grep -vxF -e dlm/cmd/dlm -e dlm/redlock) || tests_rc=$?
checks_rc=0
renice -n 0 -g "$checks" >/dev/null 2>&1 || true
wait "$checks" || checks_rc=$?
echo "== go vet ./... and staticcheck ./... (ended by ${SECONDS}s)"
cat "$checks_log"
if [ "$tests_rc" != 0 ] || [ "$checks_rc" != 0 ]; then
  echo "test.sh: FAILED:$([ "$tests_rc" != 0 ] && echo " go test")$([ "$checks_rc" != 0 ] && echo " go vet or staticcheck")" >&2
  exit 1
fi
if [ -f bench/go.mod ]; then
  echo "== bench module: go vet and go test (${SECONDS}s)"
  (cd bench && go vet ./... && env "${tests_env[@]}" go test -race -count=1 -timeout 10m ./...)
fi
echo "== done (${SECONDS}s)"
