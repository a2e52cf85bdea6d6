//! Responder cookies (RFC 5971 §8.5; seed 000 §2.3.3) for late state installation.
//!
//! Hash mode: `Cookie(R) = liveness data + hash`, where the liveness data is the secret's
//! generation and the interface the Query arrived on, and the hash is HMAC-SHA256 (truncated to
//! 128 bits) keyed with a local secret over that liveness data, the querying node's Peer
//! Identity and interface address (its NLI), the MRI and the NSLPID. The responder keeps no
//! state per Query; a Confirm echoing the cookie proves the querier saw the Response. The
//! secret rotates every `rotation`; cookies of the current and the previous generation verify,
//! so a cookie lives between one and two rotation periods.
//!
//! Layout (28 bytes, seven words like the reference implementation's):
//! `generation (4) | ifindex (4) | HMAC-SHA256 truncated (16) | reserved (4)`.

use crate::wire::{Cookie, Mri, Nli};
use hmac::{Hmac, Mac};
use pathwise_core::io::IfIndex;
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::time::{Duration, Instant};
use pathwise_core::wire::Writer;
use sha2::Sha256;

/// Responder cookie length.
pub const COOKIE_LEN: usize = 28;

/// The secrets and the code that mints and checks hash cookies.
#[derive(Debug)]
pub(crate) struct CookieMint {
    secrets: [[u8; 32]; 2],
    generation: u32,
    rotation: Duration,
    next_rotation: Instant,
    scratch: Vec<u8>,
}

impl CookieMint {
    pub fn new(rng: &mut SeededRng, rotation: Duration, now: Instant) -> Self {
        let mut secrets = [[0u8; 32]; 2];
        rng.fill(&mut secrets[0]);
        rng.fill(&mut secrets[1]);
        CookieMint {
            secrets,
            generation: 1,
            rotation: rotation.max(Duration::from_millis(1)),
            next_rotation: now + rotation,
            scratch: Vec::with_capacity(128),
        }
    }

    /// Rotate lazily: no timer keeps an idle engine awake for this.
    fn rotate(&mut self, rng: &mut SeededRng, now: Instant) {
        while now >= self.next_rotation {
            self.generation = self.generation.wrapping_add(1);
            let i = (self.generation & 1) as usize;
            rng.fill(&mut self.secrets[i]);
            self.next_rotation += self.rotation;
            if now.saturating_duration_since(self.next_rotation) > self.rotation * 2 {
                // Long idle: both secrets are stale anyway; skip ahead.
                self.generation = self.generation.wrapping_add(1);
                let j = (self.generation & 1) as usize;
                rng.fill(&mut self.secrets[j]);
                self.next_rotation = now + self.rotation;
            }
        }
    }

    fn mac(
        &mut self,
        generation: u32,
        ifindex: IfIndex,
        nli: &Nli,
        mri: &Mri,
        nslpid: u16,
    ) -> [u8; 16] {
        self.scratch.clear();
        let w = &mut Writer::new(&mut self.scratch);
        w.u32(generation);
        w.u32(ifindex.0);
        w.u16(nslpid);
        w.u8(nli.peer_identity.len().min(255) as u8);
        w.bytes(&nli.peer_identity[..nli.peer_identity.len().min(255)]);
        w.ip(nli.interface_address);
        mri.with_direction(false).emit(w);
        let key = &self.secrets[(generation & 1) as usize];
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
            return [0; 16]; // HMAC takes keys of any length; not reached.
        };
        mac.update(&self.scratch);
        let full = mac.finalize().into_bytes();
        let mut out = [0u8; 16];
        out.copy_from_slice(&full[..16]);
        out
    }

    /// A cookie for a Query from `nli` about `mri`/`nslpid` that arrived on `ifindex`.
    pub fn mint(
        &mut self,
        rng: &mut SeededRng,
        now: Instant,
        ifindex: IfIndex,
        nli: &Nli,
        mri: &Mri,
        nslpid: u16,
    ) -> Cookie {
        self.rotate(rng, now);
        let g = self.generation;
        let mac = self.mac(g, ifindex, nli, mri, nslpid);
        let mut v = Vec::with_capacity(COOKIE_LEN);
        v.extend_from_slice(&g.to_be_bytes());
        v.extend_from_slice(&ifindex.0.to_be_bytes());
        v.extend_from_slice(&mac);
        v.extend_from_slice(&[0; 4]);
        Cookie(v)
    }

    /// Check a cookie echoed in a Confirm from `nli`; the interface the Query came in on.
    pub fn verify(
        &mut self,
        rng: &mut SeededRng,
        now: Instant,
        cookie: &[u8],
        nli: &Nli,
        mri: &Mri,
        nslpid: u16,
    ) -> Option<IfIndex> {
        self.rotate(rng, now);
        if cookie.len() != COOKIE_LEN {
            return None;
        }
        let g = u32::from_be_bytes([cookie[0], cookie[1], cookie[2], cookie[3]]);
        if g != self.generation && g != self.generation.wrapping_sub(1) {
            return None;
        }
        let ifindex = IfIndex(u32::from_be_bytes([
            cookie[4], cookie[5], cookie[6], cookie[7],
        ]));
        let mac = self.mac(g, ifindex, nli, mri, nslpid);
        // Constant-time comparison: a timing difference must not reveal how much matched.
        let diff = mac
            .iter()
            .zip(&cookie[8..24])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        (diff == 0).then_some(ifindex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::PathCoupledMri;
    use std::net::{IpAddr, Ipv4Addr};

    fn nli(last: u8) -> Nli {
        Nli {
            ip_ttl: 64,
            rs_validity_ms: 30_000,
            peer_identity: vec![last; 16],
            interface_address: IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)),
        }
    }

    #[test]
    fn hash_cookie_verifies_only_for_its_query_and_for_two_generations() {
        let mut rng = pathwise_core::rng::seeded(1);
        let rot = Duration::from_secs(60);
        let mut m = CookieMint::new(&mut rng, rot, Instant::ZERO);
        let mri = Mri::PathCoupled(PathCoupledMri::flow(
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)),
        ));
        let t0 = Instant::from_secs(1);
        let c = m.mint(&mut rng, t0, IfIndex(3), &nli(1), &mri, 42);
        assert_eq!(c.0.len(), COOKIE_LEN);
        assert_eq!(
            m.verify(&mut rng, t0, &c.0, &nli(1), &mri, 42),
            Some(IfIndex(3))
        );
        // Another querier, NSLP or flow: rejected.
        assert_eq!(m.verify(&mut rng, t0, &c.0, &nli(2), &mri, 42), None);
        assert_eq!(m.verify(&mut rng, t0, &c.0, &nli(1), &mri, 43), None);
        assert_eq!(
            m.verify(&mut rng, t0, &c.0, &nli(1), &mri.with_direction(true), 42),
            Some(IfIndex(3))
        );
        let mut bad = c.0.clone();
        bad[10] ^= 1;
        assert_eq!(m.verify(&mut rng, t0, &bad, &nli(1), &mri, 42), None);
        bad = c.0.clone();
        bad[7] ^= 1; // the interface is covered by the hash
        assert_eq!(m.verify(&mut rng, t0, &bad, &nli(1), &mri, 42), None);
        // Survives one rotation, not two.
        let t1 = Instant::from_secs(61);
        assert!(m.verify(&mut rng, t1, &c.0, &nli(1), &mri, 42).is_some());
        let t2 = Instant::from_secs(121);
        assert!(m.verify(&mut rng, t2, &c.0, &nli(1), &mri, 42).is_none());
    }
}
