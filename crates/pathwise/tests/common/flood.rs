//! The data-plane proof shared by the RSVP and QoS NSLP namespace tests: a 4 Mbit/s UDP flow
//! (iperf3, port 5001) under a flood (port 5202) over the chain's 10 Mbit/s link, measured
//! at the receiver. iperf3 servers for both ports must run at the receiving node.

use pathwise::netns::{Lab, wait_for};
use serde_json::Value;
use std::time::Duration;

/// The least the flood must have put through R1 towards the 10 Mbit/s link for a round to
/// count: twice the link.
pub const FLOOD_MIN_BPS: f64 = 20e6;

/// One round: the flow's received rate while the flood ran, and the rate the flood's sender
/// achieved. The flow runs 6 s; the flood starts 0.7 s in and runs 5 s, ending before the flow
/// does (so the flow's end-of-test exchange is not stuck behind it); the flow's rate is taken
/// from the receiver's per-second intervals inside the flood, seconds 1 to 5.
pub fn flow_under_flood(
    lab: &mut Lab,
    sender: usize,
    receiver: &str,
    round: &str,
) -> anyhow::Result<(f64, f64)> {
    let (flow, flood) = (format!("flow-{round}"), format!("flood-{round}"));
    let argv = [
        "iperf3",
        "-c",
        receiver,
        "-p",
        "5001",
        "-u",
        "-b",
        "4M",
        "-l",
        "1200",
        "-t",
        "6",
        "-J",
        "--get-server-output",
    ];
    lab.spawn(&flow, sender, &argv)?;
    std::thread::sleep(Duration::from_millis(700));
    let argv = [
        "iperf3", "-c", receiver, "-p", "5202", "-u", "-b", "5M", "-P", "8", "-t", "5", "-l",
        "1200", "-J",
    ];
    lab.spawn(&flood, sender, &argv)?;
    let report = |name: &str| {
        wait_for(Duration::from_secs(30), &format!("{name}'s report"), || {
            serde_json::from_str::<Value>(&lab.log(name))
                .ok()
                .filter(|v| v["end"]["sum"].is_object())
        })
    };
    let flow_report = report(&flow)?;
    let flood_report = report(&flood)?;
    lab.kill(&flood);
    lab.kill(&flow);
    let flooded: Vec<f64> = flow_report["server_output_json"]["intervals"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|i| &i["sum"])
        .filter(|s| s["start"].as_f64() >= Some(0.99) && s["end"].as_f64() <= Some(5.01))
        .filter_map(|s| s["bits_per_second"].as_f64())
        .collect();
    anyhow::ensure!(
        flooded.len() >= 3,
        "no per-second receiver figures in {flow_report}"
    );
    let flow_bps = flooded.iter().sum::<f64>() / flooded.len() as f64;
    let flood_bps = flood_report["end"]["sum"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    Ok((flow_bps, flood_bps))
}

/// The median of three rounds in which the flood really ran at least [`FLOOD_MIN_BPS`] (a
/// machine busy with other work may not manage that, and then nothing is being tested); one
/// round's figure depends on how the flood's bursts line up with the flow's packets in the
/// drop-tail queue.
pub fn median_of_three(
    lab: &mut Lab,
    sender: usize,
    receiver: &str,
    round: &str,
) -> anyhow::Result<f64> {
    let mut v = Vec::new();
    let mut weak = Vec::new();
    for i in 0..8 {
        if v.len() == 3 {
            break;
        }
        let (flow, flood) = flow_under_flood(lab, sender, receiver, &format!("{round}-{i}"))?;
        if flood >= FLOOD_MIN_BPS {
            v.push(flow);
        } else {
            weak.push(flood);
        }
    }
    anyhow::ensure!(
        v.len() == 3,
        "the flood reached only {weak:?} bit/s in most rounds (need {FLOOD_MIN_BPS})"
    );
    v.sort_by(f64::total_cmp);
    Ok(v[1])
}
