//! Responder cookies (RFC 5971 §8.5; seed 000 §2.3.3) for late state installation.
//!
//! Hash mode: `Cookie(R) = liveness data + hash`, where the liveness data is the secret's
//! generation and the interface the Query arrived on, and the hash is HMAC-SHA256 (truncated to
//! 128 bits) keyed with a local secret over that liveness data and everything the Confirm will
//! install — what a responder keeping state would have stored (seed 000 §2.3.3; RFC 5971 §8.5
//! "Binding: The cookie must be bound to the routing state that will be installed, to prevent
//! use with different routing state, e.g., in a modified Confirm"): the querying node's Peer
//! Identity, interface address and Routing State Validity Time (its NLI), the MRI, the NSLPID
//! and the Session ID. A captured Confirm replayed with a fresh Session ID, another validity or
//! another flow does not verify. The responder keeps no state per Query; a Confirm echoing the
//! cookie proves the querier saw the Response. The secret rotates every `rotation`; only
//! cookies of the current and the previous generation verify (§8.5 "Liveness"), so a cookie
//! lives between one and two rotation periods.
//!
//! Layout (28 bytes, seven words like the reference implementation's):
//! `generation (4) | ifindex (4) | HMAC-SHA256 truncated (16) | reserved (4)`.

use crate::wire::{Cookie, Mri, Nli, SessionId};
use hmac::{Hmac, Mac};
use pathwise_core::io::IfIndex;
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::time::{Duration, Instant};
use pathwise_core::wire::Writer;
use sha2::Sha256;

/// Responder cookie length.
pub const COOKIE_LEN: usize = 28;
// Held inline in a `Cookie` (`ShortBytes`): minting and echoing one allocates nothing.
const _: () = assert!(COOKIE_LEN <= 32);

/// Why a cookie was refused (each counted under its own reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CookieRefusal {
    /// Not a cookie of this node's format.
    Malformed,
    /// Its secret's generation is neither the current nor the previous one: too old (or
    /// never minted here).
    Expired,
    /// The hash does not match what the Confirm would install: a forgery, or a replay with
    /// another Session ID, NLI, validity, MRI or NSLPID.
    Mismatch,
}

impl CookieRefusal {
    /// The drop reason.
    pub fn reason(self) -> &'static str {
        match self {
            CookieRefusal::Malformed => "cookie_malformed",
            CookieRefusal::Expired => "cookie_expired",
            CookieRefusal::Mismatch => "cookie_mismatch",
        }
    }
}

/// What a responder cookie binds: the routing state a Confirm installs (RFC 5971 §8.5).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CookieBinding<'a> {
    /// The querying node's NLI (Peer Identity, interface address, validity).
    pub nli: &'a Nli,
    /// The MRI (its direction flag aside: the Response inverts it).
    pub mri: &'a Mri,
    /// The NSLPID.
    pub nslpid: u16,
    /// The Session ID.
    pub session_id: SessionId,
}

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

    fn mac(&mut self, generation: u32, ifindex: IfIndex, b: CookieBinding<'_>) -> [u8; 16] {
        self.scratch.clear();
        let w = &mut Writer::new(&mut self.scratch);
        let nli = b.nli;
        w.u32(generation);
        w.u32(ifindex.0);
        w.u16(b.nslpid);
        w.bytes(&b.session_id.0);
        w.u32(nli.rs_validity_ms);
        w.u8(nli.peer_identity.len().min(255) as u8);
        w.bytes(&nli.peer_identity[..nli.peer_identity.len().min(255)]);
        w.ip(nli.interface_address);
        b.mri.with_direction(false).emit(w);
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

    /// A cookie for a Query that arrived on `ifindex`, bound to the state its Confirm would
    /// install.
    pub fn mint(
        &mut self,
        rng: &mut SeededRng,
        now: Instant,
        ifindex: IfIndex,
        binding: CookieBinding<'_>,
    ) -> Cookie {
        self.rotate(rng, now);
        let g = self.generation;
        let mac = self.mac(g, ifindex, binding);
        let mut v = crate::wire::ShortBytes::new();
        v.extend_from_slice(&g.to_be_bytes());
        v.extend_from_slice(&ifindex.0.to_be_bytes());
        v.extend_from_slice(&mac);
        v.extend_from_slice(&[0; 4]);
        Cookie(v)
    }

    /// Check a cookie echoed in a Confirm against the state the Confirm would install; the
    /// interface the Query came in on.
    pub fn verify(
        &mut self,
        rng: &mut SeededRng,
        now: Instant,
        cookie: &[u8],
        binding: CookieBinding<'_>,
    ) -> Result<IfIndex, CookieRefusal> {
        self.rotate(rng, now);
        if cookie.len() != COOKIE_LEN {
            return Err(CookieRefusal::Malformed);
        }
        let g = u32::from_be_bytes([cookie[0], cookie[1], cookie[2], cookie[3]]);
        // RFC 5971 §8.5 Liveness: only the current secret and the one before it; the
        // liveness data is checked before any hashing (§8.5 "Validation simplicity").
        if g != self.generation && g != self.generation.wrapping_sub(1) {
            return Err(CookieRefusal::Expired);
        }
        let ifindex = IfIndex(u32::from_be_bytes([
            cookie[4], cookie[5], cookie[6], cookie[7],
        ]));
        let mac = self.mac(g, ifindex, binding);
        // Constant-time comparison: a timing difference must not reveal how much matched.
        let diff = mac
            .iter()
            .zip(&cookie[8..24])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff == 0 {
            Ok(ifindex)
        } else {
            Err(CookieRefusal::Mismatch)
        }
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
            peer_identity: vec![last; 16].into(),
            interface_address: IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)),
        }
    }

    fn b<'a>(nli: &'a Nli, mri: &'a Mri, nslpid: u16, sid: u8) -> CookieBinding<'a> {
        CookieBinding {
            nli,
            mri,
            nslpid,
            session_id: SessionId([sid; 16]),
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
        let (n1, n2) = (nli(1), nli(2));
        let t0 = Instant::from_secs(1);
        let c = m.mint(&mut rng, t0, IfIndex(3), b(&n1, &mri, 42, 7));
        assert_eq!(c.0.len(), COOKIE_LEN);
        assert_eq!(
            m.verify(&mut rng, t0, &c.0, b(&n1, &mri, 42, 7)),
            Ok(IfIndex(3))
        );
        // Another querier, NSLP, flow or session: rejected.
        let mismatch = Err(CookieRefusal::Mismatch);
        assert_eq!(m.verify(&mut rng, t0, &c.0, b(&n2, &mri, 42, 7)), mismatch);
        assert_eq!(m.verify(&mut rng, t0, &c.0, b(&n1, &mri, 43, 7)), mismatch);
        assert_eq!(m.verify(&mut rng, t0, &c.0, b(&n1, &mri, 42, 8)), mismatch);
        // Another Routing State Validity Time: rejected (a replay asking for 49.7 days).
        let mut long = nli(1);
        long.rs_validity_ms = u32::MAX;
        assert_eq!(
            m.verify(&mut rng, t0, &c.0, b(&long, &mri, 42, 7)),
            mismatch
        );
        let up = mri.with_direction(true);
        assert_eq!(
            m.verify(&mut rng, t0, &c.0, b(&n1, &up, 42, 7)),
            Ok(IfIndex(3))
        );
        let mut bad = c.0.clone();
        bad[10] ^= 1;
        assert_eq!(m.verify(&mut rng, t0, &bad, b(&n1, &mri, 42, 7)), mismatch);
        bad = c.0.clone();
        bad[7] ^= 1; // the interface is covered by the hash
        assert_eq!(m.verify(&mut rng, t0, &bad, b(&n1, &mri, 42, 7)), mismatch);
        assert_eq!(
            m.verify(&mut rng, t0, &c.0[..20], b(&n1, &mri, 42, 7)),
            Err(CookieRefusal::Malformed)
        );
        // Survives one rotation, not two.
        let t1 = Instant::from_secs(61);
        assert!(m.verify(&mut rng, t1, &c.0, b(&n1, &mri, 42, 7)).is_ok());
        let t2 = Instant::from_secs(121);
        assert_eq!(
            m.verify(&mut rng, t2, &c.0, b(&n1, &mri, 42, 7)),
            Err(CookieRefusal::Expired)
        );
        // A generation number from the future is refused the same way.
        bad = c.0.clone();
        bad[3] = bad[3].wrapping_add(5);
        assert_eq!(
            m.verify(&mut rng, t2, &bad, b(&n1, &mri, 42, 7)),
            Err(CookieRefusal::Expired)
        );
    }
}
