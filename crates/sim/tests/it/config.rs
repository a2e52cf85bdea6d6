use pathwise_core::io::IfIndex;
use pathwise_core::time::Duration;
use pathwise_sim::{Direction, NodeRole, Topology, TopologyError};

fn err(text: &str) -> String {
    match Topology::from_toml(text) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

const TWO: &str = r#"
[[node]]
name = "A"
[[node]]
name = "B"
role = "host"
"#;

#[test]
fn errors_name_the_field() {
    let e = err(&format!("{TWO}\n[[link]]\na = \"A\"\nb = \"R9\"\n"));
    assert!(e.contains("link[0].b") && e.contains("\"R9\""), "{e}");

    let e = err(&format!(
        "{TWO}\n[[link]]\na = \"A\"\nb = \"B\"\ncolour = \"red\"\n"
    ));
    assert!(e.contains("colour"), "{e}");

    let e = err(&format!(
        "{TWO}\n[[link]]\na = \"A\"\nb = \"B\"\ndelay = \"5\"\n"
    ));
    assert!(e.contains("delay") && e.contains("unit"), "{e}");

    let e = err(&format!(
        "{TWO}\n[[link]]\na = \"A\"\nb = \"B\"\nloss = 1.5\n"
    ));
    assert!(e.contains("link[0].a_to_b") && e.contains("loss"), "{e}");

    let e = err(&format!(
        "{TWO}\n[[link]]\na = \"A\"\nb = \"B\"\na_v4 = \"192.168.0.1/24\"\nb_v4 = \"192.168.1.1/24\"\n"
    ));
    assert!(
        e.contains("link[0].b_v4") && e.contains("same subnet"),
        "{e}"
    );

    let e = err(&format!(
        "{TWO}\n[[link]]\na = \"A\"\nb = \"B\"\na_v4 = \"10.0.0.1/30\"\n"
    ));
    assert!(e.contains("link[0].b_v4"), "{e}");

    let e = err("[[node]]\nname = \"A\"\n[[node]]\nname = \"A\"\n");
    assert!(e.contains("node[1].name") && e.contains("duplicate"), "{e}");

    let e = err("[[node]]\nname = \"A\"\nrole = \"switch\"\n");
    assert!(e.contains("role"), "{e}");

    let e = err(
        "[[node]]\nname = \"A\"\nloopback_v4 = \"10.0.1.1/32\"\n[[node]]\nname = \"B\"\n[[link]]\na = \"A\"\nb = \"B\"\n",
    );
    assert!(e.contains("already used"), "{e}");
    assert!(matches!(
        Topology::from_toml("[[node]]\nname = 3\n"),
        Err(TopologyError::Toml(_))
    ));
}

#[test]
fn address_plan_and_overrides() {
    let t = Topology::from_toml(&format!(
        r#"{TWO}
[[node]]
name = "C"
processing_delay = "20us"

[defaults]
bandwidth = "10Mbit"
delay = "2ms"

[[link]]
a = "A"
b = "B"
reservable = "4Mbit"
b_reservable = 1000

[[link]]
a = "A"
b = "C"
a_v4 = "192.168.7.1/24"
b_v4 = "192.168.7.9/24"
a_name = "uplink"
cost = 5
up = false
[link.b_to_a]
loss = 0.25
bandwidth = "1Gbit"
"#
    ))
    .unwrap();
    let a = t.find_node("A").unwrap();
    let c = t.find_node("C").unwrap();
    assert_eq!(t.node(t.find_node("B").unwrap()).role, NodeRole::Host);
    assert_eq!(t.node(c).processing_delay, Duration::from_micros(20));
    assert_eq!(t.node(a).loopback_v4.to_string(), "10.255.0.1/32");
    assert_eq!(t.node(c).loopback_v6.to_string(), "fd00:ffff::3/128");
    let i1 = t.interface(a, IfIndex(1)).unwrap();
    assert_eq!(
        (i1.name.as_str(), i1.v4.to_string(), i1.v6.to_string()),
        ("eth0", "10.0.1.1/30".into(), "fd00:1::1/64".into())
    );
    assert_eq!(i1.reservable_bps, 4_000_000);
    let (_, peer) = t.peer(a, IfIndex(1)).unwrap();
    assert_eq!(
        (peer.v4.to_string(), peer.reservable_bps),
        ("10.0.1.2/30".into(), 1000)
    );
    let i2 = t.interface(a, IfIndex(2)).unwrap();
    assert_eq!(
        (i2.name.as_str(), i2.v4.to_string(), i2.v6.to_string()),
        ("uplink", "192.168.7.1/24".into(), "fd00:2::1/64".into())
    );
    let l = t.link(i2.link);
    assert!(!l.up);
    assert_eq!(l.params[Direction::AToB.index()].cost, 5);
    assert_eq!(l.params[Direction::AToB.index()].bandwidth_bps, 10_000_000);
    assert_eq!(
        l.params[Direction::AToB.index()].delay,
        Duration::from_millis(2)
    );
    assert_eq!(l.params[Direction::BToA.index()].loss, 0.25);
    assert_eq!(
        l.params[Direction::BToA.index()].bandwidth_bps,
        1_000_000_000
    );
    assert_eq!(t.owner("192.168.7.9".parse().unwrap()), Some(c));
}

#[test]
fn plan_scales_past_256_links() {
    let mut b = Topology::builder();
    let hub = b.router("hub");
    for i in 0..300 {
        let n = b.host(format!("h{i}"));
        b.link(hub, n, Default::default());
    }
    let t = b.build().unwrap();
    let i = t.interface(hub, IfIndex(300)).unwrap();
    assert_eq!(i.v4.to_string(), "10.1.44.1/30");
    assert_eq!(i.v6.to_string(), "fd00:12c::1/64");
    assert_eq!(
        t.node(t.find_node("h299").unwrap()).loopback_v4.to_string(),
        "10.255.1.45/32"
    );
}
