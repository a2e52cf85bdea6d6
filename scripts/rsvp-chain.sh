#!/usr/bin/env bash
# The RSVP test chain of issue 3, by hand: five network namespaces H1 – R1 – R2 – R3 – H2 with
# forwarding on and a `pathwise daemon` in each (needs root, iproute2, tc).
#
#   sudo scripts/rsvp-chain.sh up [--integrity ALGORITHM] [PATHWISE_BINARY]
#   sudo scripts/rsvp-chain.sh down
#
# Build with `cargo build --release` first. With --integrity (hmac-md5, hmac-sha1,
# hmac-ripemd160, hmac-sha256, hmac-sha384, hmac-sha512), every interface requires RFC 2747
# INTEGRITY under one key (id 1, a fresh random secret in /tmp/pw-chain/chain.keys, mode 600).
#
# Addresses: link n (1..4) is 10.91.n.0/24; the node west of it is .1 on its `e0`, the node east
# of it .2 on its `w0`. H1 = 10.91.1.1, H2 = 10.91.4.2. Daemons log to /tmp/pw-chain/NODE.log and
# listen on /tmp/pw-chain/NODE.sock. For RSVP-TE each node allocates labels from a range of its
# own — H1 1000–1999, R1 2000–2999, R2 3000–3999, R3 4000–4999, H2 5000–5999 — so a label in
# `show labels` names the node that gave it.
set -euo pipefail
. "$(dirname "$0")/chain-lib.sh"
nodes=("${chain_nodes[@]}")
dir=/tmp/pw-chain
cmd=${1:-}
shift || true
integrity=""
if [[ ${1:-} == --integrity ]]; then
    integrity=${2:?--integrity needs an algorithm}
    shift 2
fi
bin=${1:-$(cd "$(dirname "$0")/.." && pwd)/target/release/pathwise}

down() {
    chain_down pwc "$dir"
}

up() {
    [[ -x $bin ]] || { echo "no pathwise binary at $bin (cargo build --release)" >&2; exit 1; }
    down
    mkdir -p "$dir"
    chain_up pwc 0
    section=""
    if [[ -n $integrity ]]; then
        (umask 077; printf '1 %s %s\n' "$integrity" "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" > "$dir/chain.keys")
        section=$(printf '\n[rsvp.interface.integrity]\nmode = "require"\nkey_file = "%s/chain.keys"\n' "$dir")
    fi
    for idx in "${!nodes[@]}"; do
        n=${nodes[$idx]}
        case $n in h1) ifs="e0" ;; h2) ifs="w0" ;; *) ifs="w0 e0" ;; esac
        {
            printf '[daemon]\nsocket = "%s/%s.sock"\n\n[rsvp]\nrefresh = "30s"\ntraffic_control = "htb"\n' "$dir" "$n"
            printf 'labels = [%d, %d]\n' $(( (idx + 1) * 1000 )) $(( (idx + 1) * 1000 + 999 ))
            for i in $ifs; do
                printf '\n[[rsvp.interface]]\nname = "%s"\nbandwidth = "10Mbit"\nreservable = "8Mbit"\n' "$i"
                printf '%s\n' "$section"
            done
        } > "$dir/$n.toml"
        ip netns exec "pwc-$n" "$bin" daemon --config "$dir/$n.toml" > "$dir/$n.log" 2>&1 &
        echo $! > "$dir/$n.pid"
    done
    sleep 1
    cat <<EOT
Chain is up. Try:
  ip netns exec pwc-h1 $bin rsvp --socket $dir/h1.sock sender add --dest 10.91.4.2 --port 5001 --src 10.91.1.1 --rate 4Mbit
  ip netns exec pwc-h2 $bin rsvp --socket $dir/h2.sock reserve --dest 10.91.4.2 --port 5001 --style ff --sender 10.91.1.1 --rate 4Mbit --confirm
  ip netns exec pwc-r2 $bin rsvp --socket $dir/r2.sock show sessions
  ip netns exec pwc-r2 tc class show dev e0
  ip netns exec pwc-h1 $bin rsvp --socket $dir/h1.sock show events
  ip netns exec pwc-r2 $bin rsvp --socket $dir/r2.sock show counters   # integrity: signed, verified, drops
RSVP-TE, an LSP from H1 to H2 strict through R1 and R2, then loose:
  ip netns exec pwc-h1 $bin rsvp --socket $dir/h1.sock lsp add to-h2 --to 10.91.4.2 --ero 10.91.1.2,10.91.2.2,~10.91.4.2 --bandwidth 2Mbit
  ip netns exec pwc-h1 $bin rsvp --socket $dir/h1.sock show lsp
  ip netns exec pwc-r2 $bin rsvp --socket $dir/r2.sock show labels
  ip netns exec pwc-h1 $bin rsvp --socket $dir/h1.sock lsp del to-h2
Tear it down with: $0 down
EOT
}

case $cmd in
    up) up ;;
    down) down ;;
    *) echo "usage: $0 up [--integrity ALGORITHM] [PATHWISE_BINARY] | down" >&2; exit 2 ;;
esac
