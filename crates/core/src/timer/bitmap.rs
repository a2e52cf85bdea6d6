//! Per-level slot occupancy, so the wheel skips empty slots without visiting them.

/// An occupancy bitmap with one summary bit per 64-bit word, so finding the next occupied slot
/// costs O(slots / 4096) words at worst.
pub(super) struct Bitmap {
    words: Vec<u64>,
    summary: Vec<u64>,
}

impl Bitmap {
    pub(super) fn new(bits: usize) -> Self {
        let words = bits.div_ceil(64);
        Bitmap {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
        }
    }

    pub(super) fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
        self.summary[i / 4096] |= 1 << ((i / 64) % 64);
    }

    pub(super) fn clear(&mut self, i: usize) {
        let w = i / 64;
        self.words[w] &= !(1 << (i % 64));
        if self.words[w] == 0 {
            self.summary[w / 64] &= !(1 << (w % 64));
        }
    }

    pub(super) fn get(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// The first set bit at or after `from`.
    pub(super) fn first_from(&self, from: usize) -> Option<usize> {
        let w = from / 64;
        let first = self.words.get(w)? & (!0u64 << (from % 64));
        if first != 0 {
            return Some(w * 64 + first.trailing_zeros() as usize);
        }
        let w = w + 1;
        let mut s = w / 64;
        let mut mask = self.summary.get(s)? & (!0u64 << (w % 64));
        loop {
            if mask != 0 {
                let word = s * 64 + mask.trailing_zeros() as usize;
                return Some(word * 64 + self.words[word].trailing_zeros() as usize);
            }
            s += 1;
            mask = *self.summary.get(s)?;
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        (self.words.capacity() + self.summary.capacity()) * 8
    }
}
