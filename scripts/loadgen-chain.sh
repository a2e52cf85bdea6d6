#!/usr/bin/env bash
# Measure `pathwise loadgen rsvp` against pathwise daemons on the five-node chain
# H1 – R1 – R2 – R3 – H2 (issue #21 part 3; docs/BENCHMARKS.md "Load generators").
#
#   scripts/loadgen-chain.sh BIN FLOWS MAX_INTERVAL RAMP_INTERVAL DURATION [REFRESH]
#
# Builds the chain in namespaces lg-h1 … lg-h2 (links 10.91.n.0/24, 10 Gbit/s reservable so that
# admission never refuses), starts `BIN daemon` on R1–R3 (traffic control in memory, R =
# REFRESH), the receivers at H2 and the senders at H1 for DURATION, samples the routers' path
# and reservation states just before the senders stop, prints the senders' and receivers'
# reports (JSON) and the routers' states after the teardown, and removes everything. Needs root.
set -euo pipefail
BIN=$(realpath "$1"); FLOWS=$2; MAX=$3; RAMP=$4; DUR=$5; REFRESH=${6:-30s}
DIR=$(mktemp -d /tmp/lg-chain.XXXXXX)
NS=(lg-h1 lg-r1 lg-r2 lg-r3 lg-h2)
cleanup() {
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for n in "${NS[@]}"; do ip netns del "$n" 2>/dev/null || true; done
}
trap cleanup EXIT
for n in "${NS[@]}"; do ip netns add "$n"; ip -n "$n" link set lo up; done
for l in 0 1 2 3; do
  n=$((l + 1))
  ip link add e0 netns "${NS[$l]}" type veth peer name w0 netns "${NS[$((l + 1))]}"
  ip -n "${NS[$l]}" addr add "10.91.$n.1/24" dev e0; ip -n "${NS[$l]}" link set e0 up
  ip -n "${NS[$((l + 1))]}" addr add "10.91.$n.2/24" dev w0; ip -n "${NS[$((l + 1))]}" link set w0 up
done
ip -n lg-h1 route add default via 10.91.1.2
ip -n lg-h2 route add default via 10.91.4.1
for r in 1 2 3; do
  ip netns exec "${NS[$r]}" sysctl -qw net.ipv4.ip_forward=1
  for net in 1 2 3 4; do
    if [ "$net" -lt "$r" ]; then ip -n "${NS[$r]}" route add "10.91.$net.0/24" via "10.91.$r.1"
    elif [ "$net" -gt $((r + 1)) ]; then ip -n "${NS[$r]}" route add "10.91.$net.0/24" via "10.91.$((r + 1)).2"
    fi
  done
  cat > "$DIR/r$r.toml" <<EOF
[daemon]
socket = "$DIR/r$r.sock"

[rsvp]
refresh = "$REFRESH"
traffic_control = "memory"

[[rsvp.interface]]
name = "w0"
bandwidth = "10Gbit"
reservable = "10Gbit"

[[rsvp.interface]]
name = "e0"
bandwidth = "10Gbit"
reservable = "10Gbit"
EOF
  ip netns exec "${NS[$r]}" "$BIN" daemon --config "$DIR/r$r.toml" > "$DIR/r$r.log" 2>&1 &
done
for r in 1 2 3; do
  for _ in $(seq 100); do [ -S "$DIR/r$r.sock" ] && break; sleep 0.1; done
done
states() {
  for r in 1 2 3; do
    "$BIN" rsvp --json --socket "$DIR/r$r.sock" show counters |
      python3 -c 'import json,sys; v=json.load(sys.stdin); print("r'"$r"'", "path_states", v["path_states"], "resv_states", v["resv_states"], "kernel_drops", v["kernel_drops"])'
  done
}
ip netns exec lg-h2 "$BIN" loadgen rsvp --role receiver --refresh "$REFRESH" --json > "$DIR/rx.json" 2> "$DIR/rx.err" &
RX=$!
ip netns exec lg-h1 "$BIN" loadgen rsvp --role sender --src 10.91.1.1 --dest 10.91.4.2 \
  --flows "$FLOWS" --max-interval "$MAX" --ramp-interval "$RAMP" --refresh "$REFRESH" \
  --duration "$DUR" --progress 10s --json > "$DIR/tx.json" 2> "$DIR/tx.err" &
TX=$!
# Sample the routers 3 s before the senders stop.
secs=$(python3 -c "import re,sys; s='$DUR'; m=re.fullmatch(r'([0-9.]+)(ms|s|m)',s); print(float(m[1])*{'ms':1e-3,'s':1,'m':60}[m[2]])")
sleep "$(python3 -c "print(max(0, $secs - 3))")"
echo "== routers before stop"; states
for p in 1 2 3; do
  pid=$(pgrep -f "daemon --config $DIR/r$p.toml" | head -1)
  echo "r$p rss_kb $(awk '/VmRSS/ {print $2}' /proc/"$pid"/status) cpu_ticks $(awk '{print $14 + $15}' /proc/"$pid"/stat)"
done
wait "$TX"
echo "== senders (H1)"; cat "$DIR/tx.json"; tail -3 "$DIR/tx.err"
sleep 2
echo "== routers after teardown"; states
kill -TERM "$RX"; wait "$RX" || true
echo "== receivers (H2)"; cat "$DIR/rx.json"
uptime
