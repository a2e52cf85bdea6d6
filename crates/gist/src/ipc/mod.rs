//! The NSLP API over IPC (seed 000 §3.7): the GIST–NSLP API of [`crate::nslp`] (RFC 5971
//! Appendix B) carried over a unix socket, so that an NSLP runs as its own process: no shared
//! memory with GIST, at the cost the thesis measured (§4.3.2: the plug-in API was 1.6× cheaper).
//!
//! - [`wire`]: the frames (length-prefixed, versioned), sans-IO.
//! - [`client`]: [`IpcGist`], the NSLP's [`GistApi`](crate::nslp::GistApi) over the socket, with
//!   the same methods as the in-process API; [`IpcGist::serve`] drives any
//!   [`Nslp`](crate::nslp::Nslp) plug-in out of process.
//! - [`server`]: [`IpcServer`], GIST's side, for the daemon's loop: a stand-in plug-in per
//!   registered NSLPID.
//! - [`vectors`]: one frame of each kind, for tests and fuzz seeds.
//!
//! Unlike the rest of the crate, [`client`] and [`server`] do I/O (std unix sockets only):
//! they are the drivers' side of this API, kept here so that every NSLP program and the daemon
//! share them.

pub mod client;
pub mod server;
pub mod vectors;
pub mod wire;

#[cfg(test)]
mod tests;

pub use client::{ClientError, IpcGist, OutgoingInterfaceLookup, Upcall};
pub use server::{Admission, IpcServer, IpcStats};
pub use wire::{Frame, FrameBuffer, IpcError, MAX_FRAME, Refusal, VERSION};
