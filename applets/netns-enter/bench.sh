#!/usr/bin/env bash
# Benchmark of netns-enter against the original chain, in one script:
#   netns-enter NAME -- true                                    (as the user)
#   ip netns exec NAME setpriv --reuid U --regid G --init-groups true (as root)
# in a throwaway namespace, with a setuid build whose whitelist lives in a
# throwaway root-owned directory (the installed whitelist is not touched).
# Prints both medians and their ratio. Needs root, hyperfine, ip, setpriv
# and the unprivileged user $BENCH_USER (default claude-sbx-test).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
BENCH_USER=${BENCH_USER:-claude-sbx-test}
RUNS=${RUNS:-500}

die() { echo "bench-netns-enter: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (it creates a namespace and a setuid binary)"
for c in hyperfine ip setpriv runuser; do
	command -v "$c" >/dev/null || die "$c not found"
done
uid=$(id -u "$BENCH_USER" 2>/dev/null) || die "user $BENCH_USER does not exist (useradd -m $BENCH_USER, or set BENCH_USER)"
gid=$(id -g "$BENCH_USER")

ns=nsb$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
conf=$(mktemp -d /run/netns-enter-bench.XXXXXX)
bin=$(mktemp -d /tmp/netns-enter-bench.XXXXXX)
cleanup() {
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$conf" "$bin"
}
trap cleanup EXIT
chmod 0755 "$conf" "$bin"
mkdir -m 0755 "$conf/etc"
echo "$ns" >"$conf/etc/netns-enter"
chmod 0644 "$conf/etc/netns-enter"

CGO_ENABLED=0 "$GO" build -trimpath -tags netnsenter_only \
	-ldflags "-s -w -E=_netnsenter_rt0 -X github.com/claude-sandbox/claude-sandbox/internal/buildinfo.Sysconfdir=$conf/etc" \
	-o "$bin/netns-enter" ./cmd/multicall
chown root:root "$bin/netns-enter"
chmod 4755 "$bin/netns-enter"
ip netns add "$ns"

# Both must work before they are timed.
want=$(stat -Lc 'net:[%i]' "/run/netns/$ns")
got=$(runuser -u "$BENCH_USER" -- "$bin/netns-enter" "$ns" -- readlink /proc/self/ns/net) ||
	die "netns-enter does not work here (is $bin on a nosuid mount?)"
[ "$got" = "$want" ] || die "netns-enter landed in $got, want $want"
ip netns exec "$ns" setpriv --reuid "$uid" --regid "$gid" --init-groups true

mkdir -m 0777 "$bin/out"
runuser -u "$BENCH_USER" -- hyperfine -N --style basic --warmup 20 --runs "$RUNS" \
	--export-csv "$bin/out/enter.csv" -n "netns-enter" "$bin/netns-enter $ns -- true" >&2
hyperfine -N --style basic --warmup 20 --runs "$RUNS" \
	--export-csv "$bin/out/orig.csv" -n "ip netns exec + setpriv" \
	"ip netns exec $ns setpriv --reuid $uid --regid $gid --init-groups true" >&2

# CSV columns: command,mean,stddev,median,...
median() { awk -F, 'NR == 2 { print $4 }' "$1"; }
a=$(median "$bin/out/enter.csv")
b=$(median "$bin/out/orig.csv")
awk -v a="$a" -v b="$b" 'BEGIN {
	printf "netns-enter NAME -- true (as the user):              median %.3f ms\n", a * 1000
	printf "ip netns exec NAME setpriv ... true (the original):  median %.3f ms\n", b * 1000
	printf "ratio netns-enter / original: %.3f\n", a / b
}'
