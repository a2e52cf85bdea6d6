//! GF(2^8) for FEC's Reed-Solomon code ([`super::fec`]): reed-solomon-erasure's own field (its
//! `galois_8`, generating polynomial x^8 + x^4 + x^3 + x^2 + 1), with the two slice operations
//! where encoding and rebuilding spend their time — `out = c·in` and `out ^= c·in` — done 32
//! bytes at a time with AVX2 when the CPU has it, checked at run time.
//!
//! Why not reed-solomon-erasure's `simd-accel`: its C kernels are compiled for one target
//! (`-march=haswell` by default) and called without a CPU check, so a binary built with them
//! fails on a CPU without AVX2, and the build needs a C compiler. Here the choice is made when
//! the code runs ([`std::arch::is_x86_feature_detected`], which caches its answer), and other
//! CPUs get `galois_8`'s portable table-driven loops.
//!
//! Same field and the same encoding matrix (reed-solomon-erasure builds it from the field's
//! scalar operations, which are `galois_8`'s), so the same parity bytes: the wire does not
//! change. The tests below compare every product with `galois_8`'s and whole codes with
//! `galois_8::ReedSolomon`'s.
//!
//! The method is the split-table multiply of Plank, Greenan and Miller, "Screaming Fast Galois
//! Field Arithmetic Using Intel SIMD Instructions" (FAST 2013): multiplication by `c`
//! distributes over XOR, so `c·x = c·(x & 0x0f) ^ c·(x & 0xf0)`, and each half is a lookup in
//! a 16-entry table, which `VPSHUFB` does for 32 bytes at once.

use reed_solomon_erasure::galois_8;

/// Reed-Solomon over [`Gf256`].
pub type ReedSolomon = reed_solomon_erasure::ReedSolomon<Gf256>;

/// reed-solomon-erasure's GF(2^8) with run-time-dispatched slice kernels.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Gf256;

impl reed_solomon_erasure::Field for Gf256 {
    const ORDER: usize = galois_8::Field::ORDER;
    type Elem = u8;

    fn add(a: u8, b: u8) -> u8 {
        galois_8::add(a, b)
    }

    fn mul(a: u8, b: u8) -> u8 {
        galois_8::mul(a, b)
    }

    fn div(a: u8, b: u8) -> u8 {
        galois_8::div(a, b)
    }

    fn exp(a: u8, n: usize) -> u8 {
        galois_8::exp(a, n)
    }

    fn zero() -> u8 {
        galois_8::Field::zero()
    }

    fn one() -> u8 {
        galois_8::Field::one()
    }

    fn nth_internal(n: usize) -> u8 {
        galois_8::Field::nth_internal(n)
    }

    fn mul_slice(c: u8, input: &[u8], out: &mut [u8]) {
        assert_eq!(input.len(), out.len());
        let done = simd(c, input, out, false);
        galois_8::mul_slice(c, &input[done..], &mut out[done..]);
    }

    fn mul_slice_add(c: u8, input: &[u8], out: &mut [u8]) {
        assert_eq!(input.len(), out.len());
        let done = simd(c, input, out, true);
        galois_8::mul_slice_xor(c, &input[done..], &mut out[done..]);
    }
}

/// `c·x` in the field, by shift and add: usable in a constant, so the tables below are built
/// by the compiler. The reduction is the generating polynomial's low byte (0x1d).
const fn mul(mut a: u8, mut b: u8) -> u8 {
    let mut product = 0;
    while b != 0 {
        if b & 1 != 0 {
            product ^= a;
        }
        let carry = a & 0x80 != 0;
        a <<= 1;
        if carry {
            a ^= 0x1d;
        }
        b >>= 1;
    }
    product
}

/// Per constant `c`: `c·i` for `i` in 0..16 (the low nibble), then `c·(i << 4)` (the high one).
static NIBBLES: [[u8; 32]; 256] = {
    let mut t = [[0; 32]; 256];
    let mut c = 0;
    while c < 256 {
        let mut i = 0;
        while i < 16 {
            t[c][i] = mul(c as u8, i as u8);
            t[c][16 + i] = mul(c as u8, (i as u8) << 4);
            i += 1;
        }
        c += 1;
    }
    t
};

/// Multiply (and add when `add`) as many leading bytes as the CPU's vector unit takes whole;
/// returns how many it did (the rest is left to `galois_8`).
fn simd(c: u8, input: &[u8], out: &mut [u8], add: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { x86::mul_slice(&NIBBLES[usize::from(c)], input, out, add) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (c, input, out, add);
    0
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m256i, _mm_loadu_si128, _mm256_and_si256, _mm256_broadcastsi128_si256,
        _mm256_loadu_si256, _mm256_set1_epi8, _mm256_shuffle_epi8, _mm256_srli_epi64,
        _mm256_storeu_si256, _mm256_xor_si256,
    };

    /// `out[..n] (^)= c·input[..n]` for the largest `n` that is a multiple of 32, with
    /// `tables` = [`super::NIBBLES`]`[c]`; returns `n`.
    #[target_feature(enable = "avx2")]
    pub(super) fn mul_slice(tables: &[u8; 32], input: &[u8], out: &mut [u8], add: bool) -> usize {
        #[allow(unsafe_code)]
        // SAFETY: each load reads 16 bytes of the 32-byte array (unaligned loads).
        let (low, high) = unsafe {
            (
                _mm_loadu_si128(tables.as_ptr().cast()),
                _mm_loadu_si128(tables[16..].as_ptr().cast()),
            )
        };
        // VPSHUFB looks up within each 128-bit half: both halves get the same table.
        let (low, high) = (
            _mm256_broadcastsi128_si256(low),
            _mm256_broadcastsi128_si256(high),
        );
        let nibble = _mm256_set1_epi8(0x0f);
        let mut n = 0;
        for (i, o) in input.chunks_exact(32).zip(out.chunks_exact_mut(32)) {
            #[allow(unsafe_code)]
            // SAFETY: `i` and `o` are 32 bytes each, the width of an unaligned load and store.
            unsafe {
                let x = _mm256_loadu_si256(i.as_ptr().cast::<__m256i>());
                let lo = _mm256_shuffle_epi8(low, _mm256_and_si256(x, nibble));
                let hi =
                    _mm256_shuffle_epi8(high, _mm256_and_si256(_mm256_srli_epi64::<4>(x), nibble));
                let mut p = _mm256_xor_si256(lo, hi);
                if add {
                    p = _mm256_xor_si256(p, _mm256_loadu_si256(o.as_ptr().cast::<__m256i>()));
                }
                _mm256_storeu_si256(o.as_mut_ptr().cast::<__m256i>(), p);
            }
            n += 32;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use reed_solomon_erasure::Field as _;

    #[test]
    fn the_constant_tables_are_galois_8s_products() {
        for c in 0..=255u8 {
            for x in 0..=255u8 {
                assert_eq!(mul(c, x), galois_8::mul(c, x), "{c}·{x}");
            }
            for i in 0..16u8 {
                assert_eq!(NIBBLES[usize::from(c)][usize::from(i)], galois_8::mul(c, i));
                assert_eq!(
                    NIBBLES[usize::from(c)][16 + usize::from(i)],
                    galois_8::mul(c, i << 4)
                );
            }
        }
    }

    /// Every constant, every byte value, at lengths around the vector width (a whole number of
    /// vectors, one short, one over), both operations.
    #[test]
    fn slice_operations_match_galois_8_for_every_constant() {
        let input: Vec<u8> = (0..=255u8).cycle().take(256 + 33).collect();
        for c in 0..=255u8 {
            for len in [0, 1, 31, 32, 33, 64, 255, 256, 289] {
                let i = &input[input.len() - len..];
                let (mut ours, mut theirs) = (vec![0x5a; len], vec![0x5a; len]);
                Gf256::mul_slice(c, i, &mut ours);
                galois_8::mul_slice(c, i, &mut theirs);
                assert_eq!(ours, theirs, "c = {c}, len = {len}");
                Gf256::mul_slice_add(c, i, &mut ours);
                galois_8::mul_slice_xor(c, i, &mut theirs);
                assert_eq!(ours, theirs, "add: c = {c}, len = {len}");
            }
        }
    }

    proptest! {
        /// The codes agree: the same parity from the same data, and what one rebuilds after
        /// losing up to `m` shards is the data.
        #[test]
        fn parity_and_rebuilt_shards_are_reed_solomon_erasures(
            (k, m) in (1usize..=20, 1usize..=6),
            len in 1usize..1500,
            seed in any::<u64>(),
            lose in proptest::collection::vec(any::<prop::sample::Index>(), 0..=6),
        ) {
            let mut rng = seed;
            let mut byte = || {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (rng >> 56) as u8
            };
            let data: Vec<Vec<u8>> = (0..k).map(|_| (0..len).map(|_| byte()).collect()).collect();
            let encode = |parity: &mut Vec<Vec<u8>>, ours: bool| {
                let mut shards: Vec<Vec<u8>> = data.iter().cloned().chain(parity.drain(..)).collect();
                if ours {
                    ReedSolomon::new(k, m).unwrap().encode(&mut shards).unwrap();
                } else {
                    galois_8::ReedSolomon::new(k, m).unwrap().encode(&mut shards).unwrap();
                }
                shards
            };
            let ours = encode(&mut vec![vec![0; len]; m], true);
            let theirs = encode(&mut vec![vec![0; len]; m], false);
            prop_assert_eq!(&ours, &theirs);

            let mut held: Vec<Option<Vec<u8>>> = ours.into_iter().map(Some).collect();
            for l in lose.iter().take(m) {
                let at = l.index(k + m);
                held[at] = None;
            }
            ReedSolomon::new(k, m).unwrap().reconstruct_data(&mut held).unwrap();
            for (i, d) in data.iter().enumerate() {
                prop_assert_eq!(held[i].as_ref(), Some(d));
            }
        }
    }
}
