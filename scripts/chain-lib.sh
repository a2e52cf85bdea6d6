# The five-node namespace chain H1 – R1 – R2 – R3 – H2 shared by scripts/rsvp-chain.sh and
# scripts/gist-chain.sh (the same layout as crates/pathwise/src/netns/chain.rs): sourced, not run.
#
# Link n (1..4) is 10.91.n.0/24 (and fd00:91:n::/64 with IPv6); the node west of it is .1 / ::1
# on its `e0`, the node east of it .2 / ::2 on its `w0`; hosts route through their router,
# routers forward and route every link.

chain_nodes=(h1 r1 r2 r3 h2)

# chain_down PREFIX DIR: stop the daemons (DIR/NODE.pid), delete the namespaces, remove DIR.
chain_down() {
    local prefix=$1 dir=$2 n
    for n in "${chain_nodes[@]}"; do
        if [[ -f $dir/$n.pid ]]; then kill "$(cat "$dir/$n.pid")" 2>/dev/null || true; fi
        ip netns del "$prefix-$n" 2>/dev/null || true
    done
    rm -rf "$dir"
}

# chain_up PREFIX IPV6: namespaces PREFIX-NODE, links, addresses and routes; IPv6 too when
# IPV6 is 1.
chain_up() {
    local prefix=$1 ipv6=$2 n l a b r net
    for n in "${chain_nodes[@]}"; do ip netns add "$prefix-$n"; ip -n "$prefix-$n" link set lo up; done
    for l in 1 2 3 4; do
        a=${chain_nodes[$((l - 1))]}; b=${chain_nodes[$l]}
        ip link add e0 netns "$prefix-$a" type veth peer name w0 netns "$prefix-$b"
        ip -n "$prefix-$a" addr add "10.91.$l.1/24" dev e0
        ip -n "$prefix-$b" addr add "10.91.$l.2/24" dev w0
        if (( ipv6 )); then
            ip -n "$prefix-$a" addr add "fd00:91:$l::1/64" dev e0 nodad
            ip -n "$prefix-$b" addr add "fd00:91:$l::2/64" dev w0 nodad
        fi
        ip -n "$prefix-$a" link set e0 up
        ip -n "$prefix-$b" link set w0 up
    done
    ip -n "$prefix-h1" route add default via 10.91.1.2
    ip -n "$prefix-h2" route add default via 10.91.4.1
    if (( ipv6 )); then
        ip -n "$prefix-h1" -6 route add default via fd00:91:1::2
        ip -n "$prefix-h2" -6 route add default via fd00:91:4::1
    fi
    for r in 1 2 3; do
        ip netns exec "$prefix-r$r" sysctl -qw net.ipv4.ip_forward=1
        if (( ipv6 )); then ip netns exec "$prefix-r$r" sysctl -qw net.ipv6.conf.all.forwarding=1; fi
        for net in 1 2 3 4; do
            # Router r sits between link r (west) and link r + 1 (east).
            if (( net < r )); then
                ip -n "$prefix-r$r" route add "10.91.$net.0/24" via "10.91.$r.1"
                if (( ipv6 )); then ip -n "$prefix-r$r" -6 route add "fd00:91:$net::/64" via "fd00:91:$r::1"; fi
            fi
            if (( net > r + 1 )); then
                ip -n "$prefix-r$r" route add "10.91.$net.0/24" via "10.91.$((r + 1)).2"
                if (( ipv6 )); then ip -n "$prefix-r$r" -6 route add "fd00:91:$net::/64" via "fd00:91:$((r + 1))::2"; fi
            fi
        done
    done
    return 0
}
