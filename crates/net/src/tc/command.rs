//! The `tc` command backend: each [`TcOp`] as one iproute2 `tc` command line, run by a
//! [`TcRunner`] (kept for debugging, for comparison with the netlink backend, and for tests that
//! record the lines).

use super::{Mode, ROOT, TcBackend, TcOp, U32Match};

/// Runs one `tc` command line (its arguments after `tc`).
pub trait TcRunner {
    /// Run it; `Err` carries tc's complaint.
    fn run(&mut self, args: &[String]) -> Result<(), String>;
}

/// Runs the `tc` binary from iproute2.
#[derive(Debug, Default)]
pub struct Command;

impl TcRunner for Command {
    fn run(&mut self, args: &[String]) -> Result<(), String> {
        let out = std::process::Command::new("tc")
            .args(args)
            .output()
            .map_err(|e| format!("cannot run tc: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

impl<R: TcRunner> TcBackend for R {
    fn apply(&mut self, ops: &[TcOp]) -> Vec<(usize, String)> {
        ops.iter()
            .enumerate()
            .filter_map(|(i, op)| self.run(&args_of(&line(op))).err().map(|e| (i, e)))
            .collect()
    }
}

/// A command line's arguments. They never contain spaces (interface names cannot), so the line
/// is split on whitespace.
fn args_of(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

fn class_id(minor: u16) -> String {
    format!("{ROOT:x}:{minor:x}")
}

fn rate(bps: u64) -> String {
    format!("{}bit", bps.max(8))
}

fn verb(mode: Mode) -> &'static str {
    match mode {
        Mode::Add => "add",
        Mode::Replace => "replace",
        Mode::Change => "change",
    }
}

/// The `match` clauses of a u32 filter.
fn matches(ipv6: bool, ms: &[U32Match]) -> String {
    let (fam, host) = if ipv6 { ("ip6", 128) } else { ("ip", 32) };
    let m: Vec<String> = ms
        .iter()
        .map(|m| match *m {
            U32Match::Dst(a) => format!("match {fam} dst {a}/{host}"),
            U32Match::Src(a) => format!("match {fam} src {a}/{host}"),
            U32Match::Protocol(p) => format!("match {fam} protocol {p} 0xff"),
            U32Match::Dport(p) => format!("match {fam} dport {p} 0xffff"),
            U32Match::Sport(p) => format!("match {fam} sport {p} 0xffff"),
            U32Match::FlowLabel(l) => format!("match ip6 flowlabel {l:#x} 0xfffff"),
            // `0`, not `0x0`: the line reads as it always has.
            U32Match::U8 { value: 0, at } => format!("match u8 0 0xff at {at}"),
            U32Match::U8 { value, at } => format!("match u8 {value:#x} 0xff at {at}"),
        })
        .collect();
    m.join(" ")
}

/// The `tc` command line (after `tc`) doing `op`.
pub(super) fn line(op: &TcOp) -> String {
    match op {
        TcOp::DelRoot(dev) => format!("qdisc del dev {} root handle {ROOT:x}:", dev.name),
        TcOp::HtbRoot { dev, default } => format!(
            "qdisc replace dev {} root handle {ROOT:x}: htb default {default:x}",
            dev.name
        ),
        TcOp::Class {
            dev,
            mode,
            parent,
            minor,
            rate_bps,
            ceil_bps,
            prio,
        } => {
            let parent = if *parent == 0 {
                format!("{ROOT:x}:")
            } else {
                class_id(*parent)
            };
            let mut l = format!(
                "class {} dev {} parent {parent} classid {} htb rate {} ceil {}",
                verb(*mode),
                dev.name,
                class_id(*minor),
                rate(*rate_bps),
                rate(*ceil_bps)
            );
            if let Some(p) = prio {
                l += &format!(" prio {p}");
            }
            l
        }
        TcOp::Pfifo { dev, minor, limit } => format!(
            "qdisc replace dev {} parent {} handle {minor:x}: pfifo limit {limit}",
            dev.name,
            class_id(*minor)
        ),
        TcOp::Filter {
            dev,
            mode,
            ipv6,
            prio,
            matches: ms,
            flowid,
        } => format!(
            "filter {} dev {} parent {ROOT:x}: protocol {} prio {prio} u32 {} flowid {}",
            verb(*mode),
            dev.name,
            if *ipv6 { "ipv6" } else { "ip" },
            matches(*ipv6, ms),
            class_id(*flowid)
        ),
        TcOp::DelFilters { dev, prio } => {
            format!("filter del dev {} parent {ROOT:x}: prio {prio}", dev.name)
        }
        TcOp::DelClass { dev, minor } => {
            format!("class del dev {} classid {}", dev.name, class_id(*minor))
        }
    }
}
