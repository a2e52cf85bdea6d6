#!/usr/bin/env bash
# The GIST test chain of issue 6, by hand: five network namespaces H1 – R1 – R2 – R3 – H2 with
# IPv4 and IPv6 forwarding on and a `pathwise daemon` running GIST (with the Ping NSLP) in each
# (needs root and iproute2).
#
#   sudo scripts/gist-chain.sh up [--qos] [--without NODE] [PATHWISE_BINARY]
#   sudo scripts/gist-chain.sh down
#
# Build with `cargo build --release` first. `--without r2` leaves GIST off on that node: it
# forwards GIST's Queries like any packet and is absent from the pinged path. When the `openssl`
# command is there, every node also runs C-mode over TLS with a certificate from a test CA made
# in /tmp/pw-gist/tls (peers verified), so `ping --transport tls` works.
#
# Addresses: link n (1..4) is 10.91.n.0/24 and fd00:91:n::/64; the node west of it is .1 / ::1 on
# its `e0`, the node east of it .2 / ::2 on its `w0`. H1 = 10.91.1.1, H2 = 10.91.4.2 and
# fd00:91:4::2. Daemons log to /tmp/pw-gist/NODE.log and listen on /tmp/pw-gist/NODE.sock; their
# IPC NSLP API is on /tmp/pw-gist/NODE-ipc.sock (`gist send`, `gist listen`, `gist nslp-ping`).
# R2 relays NSLPID 42 (`relay = [42]`, the NSIS-ka test NSLP's); the other routers let it by.
#
# `--qos` also runs the QoS NSLP on every node (`[qos_nslp]`, refresh period 5 s), admitting
# through RSVP's HTB traffic control (`[rsvp] traffic_control = "htb"`, the layout of
# scripts/rsvp-chain.sh: R2 -> R3 a 10 Mbit/s link, the others 1 Gbit/s, 80 % reservable), so
# `pathwise qos reserve` installs an HTB class at every hop (`tc class show`; needs `tc`).
set -euo pipefail
. "$(dirname "$0")/chain-lib.sh"
nodes=("${chain_nodes[@]}")
dir=/tmp/pw-gist
cmd=${1:-}
shift || true
without=""
qos=0
while [[ ${1:-} == --* ]]; do
    case $1 in
        --without) without=${2:?--without needs a node (h1 r1 r2 r3 h2)}; shift 2 ;;
        --qos) qos=1; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
bin=${1:-$(cd "$(dirname "$0")/.." && pwd)/target/release/pathwise}

down() {
    chain_down pwg "$dir"
}

# A test CA and a certificate per node (EC P-256, 30 days, server and client use), in $dir/tls.
certs() {
    local t=$dir/tls n ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    mkdir -p "$t"
    openssl req -x509 "${ec[@]}" -keyout "$t/ca.key" -out "$t/ca.pem" -days 30 \
        -subj "/CN=pathwise test ca" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:gist-node\n' > "$t/node.ext"
    for n in "${nodes[@]}"; do
        openssl req "${ec[@]}" -keyout "$t/$n.key" -out "$t/$n.csr" -subj "/CN=$n" 2>/dev/null
        openssl x509 -req -in "$t/$n.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial \
            -out "$t/$n.pem" -days 30 -extfile "$t/node.ext" 2>/dev/null
    done
}

up() {
    [[ -x $bin ]] || { echo "no pathwise binary at $bin (cargo build --release)" >&2; exit 1; }
    down
    mkdir -p "$dir"
    chain_up pwg 1
    tls=0
    if command -v openssl > /dev/null; then certs; tls=1; fi
    for n in "${nodes[@]}"; do
        [[ $n == "$without" ]] && continue
        case $n in h1) ifs='["e0"]' ;; h2) ifs='["w0"]' ;; *) ifs='["w0", "e0"]' ;; esac
        {
            printf '[daemon]\nsocket = "%s/%s.sock"\n\n[gist]\ninterfaces = %s\nrefresh_period = "30s"\n' \
                "$dir" "$n" "$ifs"
            printf 'ipc_socket = "%s/%s-ipc.sock"\n' "$dir" "$n"
            if [[ $n == r2 ]]; then printf 'relay = [42]\n'; fi
            if (( tls )); then
                printf 'transports = ["udp", "tcp", "tls"]\n\n[gist.tls]\ncertificate = "%s/tls/%s.pem"\nkey = "%s/tls/%s.key"\nca = "%s/tls/ca.pem"\n' \
                    "$dir" "$n" "$dir" "$n" "$dir"
            fi
            if (( qos )); then
                printf '\n[qos_nslp]\nrefresh_period = "5s"\n\n[rsvp]\ntraffic_control = "htb"\n'
                case $n in h1) qifs='e0' ;; h2) qifs='w0' ;; *) qifs='w0 e0' ;; esac
                for i in $qifs; do
                    bw=1000; if [[ $n == r2 && $i == e0 ]]; then bw=10; fi
                    printf '\n[[rsvp.interface]]\nname = "%s"\nbandwidth = "%sMbit"\nreservable = "%sMbit"\n' \
                        "$i" "$bw" "$((bw * 8 / 10))"
                done
            fi
        } > "$dir/$n.toml"
        ip netns exec "pwg-$n" "$bin" daemon --config "$dir/$n.toml" > "$dir/$n.log" 2>&1 &
        echo $! > "$dir/$n.pid"
    done
    sleep 1
    cat <<EOT
Chain is up. Try:
  $bin gist --socket $dir/h1.sock ping 10.91.4.2 --count 3        # RTT and the path of GIST nodes
  $bin gist --socket $dir/h1.sock ping fd00:91:4::2 --count 3
  $bin gist --socket $dir/h1.sock ping 10.91.4.2 --transport tcp  # C-mode: TCP associations
  $bin gist --socket $dir/h1.sock ping 10.91.4.2 --transport tls  # C-mode over TLS (with openssl)
  $bin gist --socket $dir/r2.sock show ma                          # one per neighbour
  $bin gist --socket $dir/r2.sock show mrs                         # routing state per session
  $bin gist --socket $dir/r2.sock show counters                    # messages, drops by reason
  ip netns exec pwg-h2 $bin gist listen --nslpid 42 --echo --ipc-socket $dir/h2-ipc.sock &
  ip netns exec pwg-h1 $bin gist send --nslpid 42 10.91.4.2 --data hello --ipc-socket $dir/h1-ipc.sock
  $bin gist --socket $dir/r2.sock show mrs                         # R2 relays NSLPID 42
  ip netns exec pwg-r2 tshark -X lua_script:contrib/wireshark/gist.lua -i w0 -f 'udp port 270'
EOT
    if (( qos )); then
        cat <<EOT
With --qos:
  $bin qos --socket $dir/h1.sock reserve 10.91.4.2 --rate 4Mbit --protocol 17 --dport 5001
  $bin qos --socket $dir/r2.sock show                             # the session at a transit node
  ip netns exec pwg-r2 tc class show dev e0                        # its 4 Mbit/s HTB class
  $bin qos --socket $dir/h1.sock release SESSION
EOT
    fi
    echo "Tear it down with: $0 down"
}

case $cmd in
    up) up ;;
    down) down ;;
    *) echo "usage: $0 up [--qos] [--without NODE] [PATHWISE_BINARY] | down" >&2; exit 2 ;;
esac
