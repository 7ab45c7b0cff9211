#!/bin/sh
# Installs the Debian packages hotkvd builds and tests with, and only those that
# are missing.  Quiet when everything is present; uses sudo only when not root.
set -eu
# Build: the libraries.  Tests: redis-tools and python3-redis (interop),
# redis-server (the differential test and the benchmark comparison start their
# own on a free port; the package's service is stopped and disabled below),
# clang and its runtime (the libFuzzer pass and the clang build), valgrind.
# Packaging (make deb and its test): dpkg-dev (dpkg-shlibdeps names the
# library packages), lintian checks the .deb, man-db and groff-base the man
# pages, logrotate the rotation snippet.  Cluster tests: etcd-server and
# etcd-client (the tests start their own etcd; the package's service is
# stopped and disabled below), iproute2 and nftables (network namespaces and
# one-way cuts between them).  Metrics tests: prometheus (promtool checks the
# Prometheus exposition hotkvd writes; the package's service is stopped and
# disabled below).  Benchmarks: nginx (scripts/bench/http_compare serves a
# static file with it next to hotkvd's HTTP GET, from a temp config on a free
# port; the package's service is stopped and disabled below).  Model checking:
# spin (Debian's 6.5.2 is what the leaf move model, tests/model/move.pml, is
# checked with; gcc builds its verifier).  python3-yaml: scripts/check/prom_rules.py
# reads the shipped Prometheus rules and their tests.
PKGS="libevent-dev libsqlite3-dev libssl-dev libmsgpack-dev check pkg-config \
redis-tools redis-server python3-redis clang libclang-rt-14-dev valgrind \
dpkg-dev lintian man-db groff-base logrotate etcd-server etcd-client iproute2 nftables \
prometheus python3-yaml nginx spin"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done
# Client-library tests (tests/integration/check_csc.c): node and npm, with which
# the suite installs node-redis from the npm registry into build/npm (never
# vendored).  A nodejs that ships its own npm (NodeSource's) counts.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
# Debian starts redis-server, etcd, prometheus and nginx as services when it installs
# them; the tests never use those (they start their own on free ports, under
# temporary directories), so stop them and keep them from starting at boot.
for svc in redis-server etcd prometheus nginx; do
    case " $missing " in
    *" $svc "* | *" $svc-server "*)
        if [ -d /run/systemd/system ]; then
            $SUDO systemctl disable --now "$svc.service" >&2 || true
        else
            $SUDO invoke-rc.d "$svc" stop >&2 || true
            $SUDO update-rc.d "$svc" disable >&2 || true
        fi
        ;;
    esac
done
