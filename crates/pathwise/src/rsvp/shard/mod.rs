//! Sharded RSVP (`[daemon] threads = N`, issue #21): sessions spread over N engines by a hash
//! of their SESSION, each engine with its own state tables and timer wheel, so N cores share the
//! work with no lock on the message path.
//!
//! # The pieces
//!
//! - [`ShardMap`] says which shard holds a session and which shard a received datagram goes
//!   to. The daemon's dispatcher ([`runtime`]) and the simulator's sharded node
//!   ([`sim::ShardedRsvp`]) both route with it, and both run the unchanged
//!   [`pathwise_rsvp::RsvpEngine`] per shard: the same code is tested in simulation and run on
//!   sockets.
//! - [`shard_configs`] derives each shard's engine configuration from the node's: its own
//!   random seed and its own slice of the label range.
//! - [`check_config`] refuses, at `pathwise daemon --check` and at start, the combinations the
//!   shards cannot yet keep correct (below).
//!
//! # Design decisions
//!
//! **Shard key.** The SESSION object with its Flags cleared ([`Session::identity`]: destination,
//! protocol and port; for an LSP tunnel the end point, Tunnel ID and Extended Tunnel ID, RFC
//! 2205 §3.2 / §A.1, RFC 3209 §4.6.1), hashed with a keyed hash whose key comes from the node's
//! seed. Every message that names a session (Path, Resv, their teardowns, errors and ResvConf)
//! carries a SESSION, so all the state of one session (PSBs, RSBs, blockade, the local API's
//! requests) lives in exactly one engine and its processing is exactly the unsharded engine's.
//! A message without a readable SESSION (Integrity Challenge/Response, or one too malformed
//! to read) goes to shard 0, whose engine counts and answers it as an unsharded engine would; a
//! Hello goes to every shard (below); Ack and Srefresh go by the identifiers they name (refresh
//! reduction, below).
//!
//! **Bundles** (RFC 2961 §3.3: "each sub-message is processed as if it was received
//! individually"): when every sub-message of a valid Bundle belongs to one shard, the Bundle
//! goes there whole; otherwise the dispatcher splits it and hands each sub-message to its
//! shard as a message of its own, counting a sub-message it cannot read as dropped
//! (`bad_bundle`), as the engine does.
//!
//! **Receive path.** Raw IP sockets of protocol 46 cannot be spread by the kernel
//! (`SO_REUSEPORT` is for UDP and TCP; every raw socket of a protocol gets a copy of every
//! packet), and a classic BPF filter per shard socket would see the SESSION only at a fixed
//! offset, which INTEGRITY objects, IPv6 and Bundles move. So one dispatcher thread (the
//! daemon's loop) reads the sockets with `recvmmsg`, reads the SESSION of each datagram (a walk
//! over object headers, no parsing of the rest) and hands it to its shard over a lock-free
//! single-producer single-consumer ring ([`rtrb`]), recycling the buffers over a second ring so
//! the steady state allocates nothing. KOM's dispatcher (seed 001 §III.C, Table IV) also locked
//! a central state repository per session, a central timer container, and traffic control per
//! interface on every message; ours takes no lock on the message path: each shard sends on
//! its own sockets, runs its own timer wheel, and takes a lock only when a reservation is
//! installed, changed or removed (below), never for a refresh.
//!
//! **Admission across shards.** All shards (and the QoS NSLP) admit through one
//! [`pathwise_core::tc::SharedTrafficControl`]: the interface budget is checked and taken
//! under its lock in one step, so concurrent reservations on one interface from different
//! shards never over-commit it. The lock is held for one admission (and, with HTB, the netlink
//! exchange that installs the class), not per message.
//!
//! **Labels** (RSVP-TE, RFC 3209 §4.1): the node's label range is cut into N disjoint ranges,
//! one per shard, so label allocation needs no coordination and no two shards hand out the
//! same label.
//!
//! **Refresh reduction** (RFC 2961). Srefresh lists and MESSAGE_ID_ACK/NACKs name messages,
//! not sessions, so the dispatcher routes them by identifier ([`ShardMap::dispatch`]):
//!
//! - *One Epoch, one identifier sequence per node.* §4.5: the Epoch "MUST NOT be changed
//!   unless the node or the RSVP agent is restarted", and a trigger message's identifier
//!   "MUST have a value that is greater than any other value previously used with the same
//!   Epoch" (per address). [`shard_configs`] gives every shard the node's Epoch and one shared
//!   counter ([`pathwise_rsvp::MessageIdSpace`]); an identifier is `counter << bits | shard`.
//!   Per-shard Epochs would make every neighbour take each shard's messages for a restart of
//!   the node (§4.5) and resend everything to it, over and over.
//! - *Our identifiers name their shard.* §4.5 lets the sender choose its identifiers, so the
//!   low bits carry the shard: a MESSAGE_ID_ACK or NACK (§4.3, §5.4), alone in an Ack or
//!   piggybacked on any message, goes to the shard that sent the message it answers (in an
//!   Ack message of its own, from the neighbour that generated it, when the carrying message
//!   belongs to another shard). The unsharded engine is the case of one shard (0 bits).
//! - *A neighbour's identifiers name nothing of ours.* An Srefresh lists identifiers the
//!   neighbour chose (§5.3), so the dispatcher notes, per (neighbour, Epoch, identifier),
//!   the shard each identified Path and Resv went to (by its SESSION), and cuts an Srefresh
//!   into one per shard. Chosen over handing every Srefresh to every shard: §5.4 wants a NACK
//!   only for an identifier that "does not match any installed state" of the node, so each
//!   shard would have to learn whether any other holds it before answering — a reply channel
//!   and a wait per Srefresh. The map is a cache: an identifier it does not know goes to
//!   shard 0, which NACKs it unless it holds the state, and the neighbour answers a NACK with
//!   the full message (§5.4), which reaches the right shard by its SESSION and is noted again
//!   — a miss costs one NACK and one full refresh, never wrong state. Entries not named for
//!   three refresh periods (the longest a neighbour announced) are dropped, so it holds about
//!   one 17-byte entry per installed state a neighbour identified, two at most.
//! - Each shard keeps its own per-neighbour Epoch record (a neighbour's restart is seen by
//!   every shard on its first message from it, and each resends its own state, §4.5) and its
//!   own capable-neighbour list (learned from the messages it is handed).
//!
//! **LSPs headed by this node** (`[[rsvp.lsp]]`, `rsvp lsp add`, RFC 3209). The head end picks
//! the LSP's Tunnel ID (§4.6.1.1), and so its SESSION and its shard; the name is all the
//! request has. So the shard the name hashes to ([`ShardMap::of_lsp`]) heads the LSP, and
//! picks only Tunnel IDs whose session hashes to itself (its engine's `Config::shard`, from
//! [`shard_configs`]): the Resv, PathErr and ResvTear that come back reach it by their SESSION
//! as every other message does, and no two shards pick the same Tunnel ID. Closing or
//! re-routing an LSP (make-before-break keeps the session) goes to the same shard by name;
//! `show lsp` and `show labels` are gathered from every shard.
//!
//! **Hello** (RFC 3209 §5). A Hello names no session, and the neighbours it watches are
//! those the node has state with, which is spread over the shards. So the dispatcher hands
//! every Hello to every shard ([`ShardMap::dispatch`]); each shard tracks the neighbours its own
//! state depends on, sends them REQUESTs and takes their liveness and Src_Instance from every
//! Hello, and tears down its own state when one fails or restarts (§5.3) — the node's
//! neighbour-down reaches every shard that has something to tear down, with no message
//! between shards. The node has one Src_Instance (§5.3: it changes only on a restart), given
//! to every shard by [`shard_configs`], and shard 0 alone answers REQUESTs and counts received
//! Hellos, so a neighbour gets one ACK per REQUEST. Chosen over one Hello instance at shard 0
//! with the others told of failures: that needs the state's neighbours of every shard at shard
//! 0 and a message between shards per change, where this needs a copy of each Hello per shard.
//! What it costs: a neighbour that several shards have state with gets a REQUEST from each of
//! them every interval (at most N per interval), and `neighbor_failures`/`neighbor_restarts`
//! count one per shard that had state with the neighbour.
//!
//! **Management.** Verbs about one session (`rsvp.sender.add`, `rsvp.reserve`, …) go to its
//! shard; views and counters (`show sessions`, `counters`, metrics, `labels`, `neighbors`,
//! `events`) are gathered from every shard and merged.
//!
//! **Message integrity** (RFC 2747). Every shard signs as the node: the shards draw their
//! sequence numbers from one strictly increasing sequence per key (§3,
//! `pathwise_auth::SharedSequences`). Every shard checks what it is handed under the
//! interface's policy and keeps its own receive windows (§4.2): the dispatcher hands on a
//! neighbour's messages in the order they came, and a replay goes to the shard its original
//! went to, so each window sees an increasing subsequence and refuses every replay. A message
//! the dispatcher cuts (an Ack or Srefresh naming several shards' messages, another shard's
//! acknowledgements on a Path or Resv) loses the digest that covered it whole: the dispatcher
//! verifies it and signs each part again with its key, sequence number and flags, one part
//! per shard, or hands it uncut to one shard, which refuses it and counts why. A shard without
//! sequence state for a neighbour challenges it (§4.3) with a cookie whose low bits name the
//! shard, and the Integrity Response goes back to that shard; a Challenge to the node goes to
//! every shard: shard 0 answers, resends and refreshes at once, the others resend and refresh
//! 200 ms later, behind the Response.
//!
//! What it costs: the shards of one sender sign concurrently, so a neighbour may receive their
//! numbers slightly out of order; a pathwise receive window tolerates the interface's `window`
//! (RFC 2747 §4.2; 256 by default, `pathwise_auth::REPLAY_WINDOW`), and a message further
//! behind is refused as `integrity_replayed` (and repaired by the next refresh or
//! retransmission). Each shard
//! challenges a neighbour it has no sequence state for on its own, so a restart costs up to N
//! handshakes per neighbour.
//!
//! Without `threads` the daemon runs one shard per core ([`NodeConfig::rsvp_shards`]).

pub mod runtime;
pub mod sim;

use crate::config::ConfigError;
use crate::config::{NodeConfig, Source};
pub use pathwise_rsvp::shard::{MAX_SHARDS, ShardMap, label_ranges, session_of, shard_configs};

/// Refuse a `threads` the shards cannot run (outside 1–[`MAX_SHARDS`], or more shards than
/// labels), at the `threads` line.
pub(crate) fn check_config(cx: &Source<'_>, cfg: &NodeConfig, errs: &mut Vec<ConfigError>) {
    let Some(t) = &cfg.daemon.threads else {
        return;
    };
    let n = *t.get_ref();
    let at = |message: String| cx.at(t.span(), "daemon.threads", message);
    if n == 0 || n > MAX_SHARDS {
        errs.push(at(format!("{n}: 1 to {MAX_SHARDS} RSVP shards")));
        return;
    }
    let Some(r) = &cfg.rsvp else {
        return;
    };
    if n == 1 {
        return;
    }
    if r.label_count() < n as u64 {
        let (first, last) = r.label_range();
        errs.push(at(format!(
            "threads = {n}: rsvp.labels [{first}, {last}] has fewer labels than shards"
        )));
    }
}

#[cfg(test)]
mod tests;
