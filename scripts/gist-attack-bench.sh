#!/usr/bin/env bash
# The thesis's cookie/attacker experiment (seed 000 §4.5.1, Table 4.2) on a real network: an
# attacker namespace floods a responder namespace running `pathwise daemon` with GIST, for each
# cookie mode (hash, random) and attack mode (query, query-confirm). Prints, per scenario, the
# responder's CPU (utime + stime over the attack, % of one core) and its peak resident set
# (VmRSS sampled every 100 ms) above and including its idle size, median of RUNS runs.
#
#   sudo scripts/gist-attack-bench.sh [PATHWISE_BINARY] [RATE] [SECONDS] [RUNS]
#
# Needs root and iproute2. Creates namespaces pwa-att and pwa-resp (10.93.0.1 – 10.93.0.2) and
# removes them on exit.
set -euo pipefail
bin=${1:-$(cd "$(dirname "$0")/.." && pwd)/target/release/pathwise}
rate=${2:-500}
secs=${3:-10}
runs=${4:-3}
dir=$(mktemp -d /tmp/pw-attack.XXXXXX)
tck=$(getconf CLK_TCK)

cleanup() {
    [[ -f $dir/pid ]] && kill "$(cat "$dir/pid")" 2>/dev/null || true
    ip netns del pwa-att 2>/dev/null || true
    ip netns del pwa-resp 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
cleanup_ns() { ip netns del pwa-att 2>/dev/null || true; ip netns del pwa-resp 2>/dev/null || true; }
cleanup_ns
ip netns add pwa-att
ip netns add pwa-resp
ip link add a0 netns pwa-att type veth peer name r0 netns pwa-resp
ip -n pwa-att addr add 10.93.0.1/24 dev a0
ip -n pwa-resp addr add 10.93.0.2/24 dev r0
for n in att resp; do ip -n "pwa-$n" link set lo up; done
ip -n pwa-att link set a0 up
ip -n pwa-resp link set r0 up

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

one() { # cookie mode, attack mode -> "cpu_pct idle_kb peak_kb"
    printf '[daemon]\nsocket = "%s/resp.sock"\n\n[gist]\ninterfaces = ["r0"]\ncookie_mode = "%s"\nconfirm_wait = "2s"\n' \
        "$dir" "$1" > "$dir/resp.toml"
    ip netns exec pwa-resp "$bin" daemon --config "$dir/resp.toml" > "$dir/resp.log" 2>&1 &
    local pid=$!
    echo $pid > "$dir/pid"
    for _ in $(seq 50); do [[ -S $dir/resp.sock ]] && break; sleep 0.1; done
    sleep 1
    local idle c0 peak=0 r
    idle=$(rss_kb $pid)
    c0=$(cpu_ticks $pid)
    ip netns exec pwa-att "$bin" gist --json attack 10.93.0.2 --mode "$2" --rate "$rate" \
        --duration "${secs}s" > "$dir/attack.json" &
    local apid=$!
    while kill -0 $apid 2>/dev/null; do
        r=$(rss_kb $pid); (( r > peak )) && peak=$r
        sleep 0.1
    done
    local c1
    c1=$(cpu_ticks $pid)
    kill $pid; wait $pid 2>/dev/null || true
    rm -f "$dir/pid" "$dir/resp.sock"
    awk -v d=$((c1 - c0)) -v t="$tck" -v s="$secs" -v i="$idle" -v p="$peak" \
        'BEGIN { printf "%.1f %d %d\n", 100 * d / t / s, i, p }'
}

echo "rate $rate msg/s, $secs s, median of $runs runs; $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
printf '%-8s %-14s %8s %10s %10s   %s\n' cookie attack "CPU %" "idle MB" "peak MB" "runs (CPU% / peak MB)"
for cookie in random hash; do
    for mode in query query-confirm; do
        cpus=() ; idles=() ; peaks=()
        for _ in $(seq "$runs"); do
            read -r c i p < <(one "$cookie" "$mode")
            cpus+=("$c"); idles+=("$i"); peaks+=("$p")
        done
        mc=$(printf '%s\n' "${cpus[@]}" | median)
        mi=$(printf '%s\n' "${idles[@]}" | median)
        mp=$(printf '%s\n' "${peaks[@]}" | median)
        detail=""
        for k in $(seq 0 $((runs - 1))); do
            detail+="${cpus[$k]}/$(awk -v p="${peaks[$k]}" 'BEGIN { printf "%.1f", p / 1024 }') "
        done
        printf '%-8s %-14s %8s %10.1f %10.1f   %s\n' "$cookie" "$mode" "$mc" \
            "$(awk -v x="$mi" 'BEGIN { print x / 1024 }')" "$(awk -v x="$mp" 'BEGIN { print x / 1024 }')" "$detail"
    done
done
