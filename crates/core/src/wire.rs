//! Bounds-checked byte access shared by the protocol codecs.
//!
//! No-panic contract: every [`Reader`] method checks its length first and returns
//! [`Truncated`] instead of indexing past the end; [`Writer`] appends to a `Vec`, so emitting never
//! indexes out of bounds either. Patching methods (`patch_*`) take positions the writer itself
//! returned, and report a [`Truncated`] error rather than panic if given a bad one.
//!
//! TLV helpers: protocol codecs describe their object header with [`TlvHeader`]; [`TlvIter`] walks
//! a buffer of such objects, yielding each header and body and stopping with an error at the
//! first object whose length does not fit.

use thiserror::Error;

/// A read or patch past the end of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("truncated: needed {needed} bytes at offset {offset}, {available} available")]
pub struct Truncated {
    /// Offset at which the read started.
    pub offset: usize,
    /// Bytes the read needed.
    pub needed: usize,
    /// Bytes that were left.
    pub available: usize,
}

/// A cursor over a byte slice.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether everything has been consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unconsumed bytes, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Consume `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        if n > self.remaining() {
            return Err(Truncated {
                offset: self.pos,
                needed: n,
                available: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Consume exactly `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Truncated> {
        let b = self.bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// Skip `n` bytes.
    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<(), Truncated> {
        self.bytes(n).map(|_| ())
    }

    /// One byte.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, Truncated> {
        Ok(self.array::<1>()?[0])
    }

    /// A big-endian `u16`.
    #[inline]
    pub fn u16(&mut self) -> Result<u16, Truncated> {
        self.array().map(u16::from_be_bytes)
    }

    /// A big-endian 24-bit value.
    #[inline]
    pub fn u24(&mut self) -> Result<u32, Truncated> {
        let [a, b, c] = self.array()?;
        Ok(u32::from_be_bytes([0, a, b, c]))
    }

    /// A big-endian `u32`.
    #[inline]
    pub fn u32(&mut self) -> Result<u32, Truncated> {
        self.array().map(u32::from_be_bytes)
    }

    /// A big-endian `u64`.
    #[inline]
    pub fn u64(&mut self) -> Result<u64, Truncated> {
        self.array().map(u64::from_be_bytes)
    }

    /// A big-endian IEEE 754 single-precision float.
    pub fn f32(&mut self) -> Result<f32, Truncated> {
        self.u32().map(f32::from_bits)
    }

    /// An IPv4 address.
    #[inline]
    pub fn ipv4(&mut self) -> Result<std::net::Ipv4Addr, Truncated> {
        self.array::<4>().map(std::net::Ipv4Addr::from)
    }

    /// An IPv6 address.
    #[inline]
    pub fn ipv6(&mut self) -> Result<std::net::Ipv6Addr, Truncated> {
        self.array::<16>().map(std::net::Ipv6Addr::from)
    }
}

/// An appending writer over a `Vec<u8>`.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// A writer appending to `buf`.
    #[inline]
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        Writer { buf }
    }

    /// Current length of the underlying buffer (the position of the next byte).
    pub fn position(&self) -> usize {
        self.buf.len()
    }

    /// Everything written to the underlying buffer so far.
    pub fn written(&self) -> &[u8] {
        self.buf
    }

    /// Append bytes.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// Append `n` zero bytes.
    pub fn zeros(&mut self, n: usize) {
        self.buf.resize(self.buf.len() + n, 0);
    }

    /// Append one byte.
    #[inline]
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// Append a big-endian `u16`.
    #[inline]
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_be_bytes());
    }

    /// Append a big-endian 24-bit value (the top byte of `v` is dropped).
    #[inline]
    pub fn u24(&mut self, v: u32) {
        self.bytes(&v.to_be_bytes()[1..]);
    }

    /// Append a big-endian `u32`.
    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_be_bytes());
    }

    /// Append a big-endian `u64`.
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_be_bytes());
    }

    /// Append a big-endian IEEE 754 single-precision float.
    pub fn f32(&mut self, v: f32) {
        self.u32(v.to_bits());
    }

    /// Append an IP address in its natural length (4 or 16 bytes).
    #[inline]
    pub fn ip(&mut self, addr: std::net::IpAddr) {
        match addr {
            std::net::IpAddr::V4(a) => self.bytes(&a.octets()),
            std::net::IpAddr::V6(a) => self.bytes(&a.octets()),
        }
    }

    /// Overwrite a big-endian `u16` at `pos` (a length or checksum field written earlier).
    pub fn patch_u16(&mut self, pos: usize, v: u16) -> Result<(), Truncated> {
        let available = self.buf.len().saturating_sub(pos);
        match self.buf.get_mut(pos..pos.saturating_add(2)) {
            Some(dst) => {
                dst.copy_from_slice(&v.to_be_bytes());
                Ok(())
            }
            None => Err(Truncated {
                offset: pos,
                needed: 2,
                available,
            }),
        }
    }

    /// Pad with zeros up to the next multiple of `align` bytes.
    pub fn pad_to(&mut self, align: usize) {
        let rem = self.buf.len() % align.max(1);
        if rem != 0 {
            self.zeros(align - rem);
        }
    }
}

/// The Internet checksum (RFC 1071): one's complement of the one's-complement sum of 16-bit words,
/// an odd trailing byte padded with zero.
pub fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A protocol's TLV (object) header, as [`TlvIter`] needs to know it.
pub trait TlvHeader: Sized {
    /// The error a malformed header turns into.
    type Error: From<Truncated>;
    /// Read one header; the reader is positioned at its first byte.
    fn read(r: &mut Reader<'_>) -> Result<Self, Self::Error>;
    /// Length of the body that follows the header, in bytes (padding included).
    fn body_len(&self) -> usize;
}

/// Iterates over consecutive TLVs in a buffer, yielding `(header, body)`.
///
/// After the first error it yields nothing more: a length that does not fit leaves no way to
/// find the next object.
#[derive(Debug)]
pub struct TlvIter<'a, H> {
    r: Reader<'a>,
    failed: bool,
    _h: core::marker::PhantomData<H>,
}

impl<'a, H: TlvHeader> TlvIter<'a, H> {
    /// Objects in `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        TlvIter {
            r: Reader::new(buf),
            failed: false,
            _h: core::marker::PhantomData,
        }
    }

    /// Offset of the next object within the buffer.
    pub fn position(&self) -> usize {
        self.r.position()
    }
}

impl<'a, H: TlvHeader> Iterator for TlvIter<'a, H> {
    type Item = Result<(H, &'a [u8]), H::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.is_empty() {
            return None;
        }
        let item = H::read(&mut self.r).and_then(|h| {
            let body = self.r.bytes(h.body_len())?;
            Ok((h, body))
        });
        self.failed = item.is_err();
        Some(item)
    }
}

/// Writes a TLV whose length is known only after its body: reserve the header, write the body,
/// then patch the length. `write_header` is called twice: first with a body length of zero to
/// reserve space, then with the real body length to fill it in (it must write the same number of
/// bytes both times).
pub fn write_tlv(
    w: &mut Writer<'_>,
    mut write_header: impl FnMut(&mut Writer<'_>, usize),
    write_body: impl FnOnce(&mut Writer<'_>),
) {
    let start = w.position();
    write_header(w, 0);
    let header_len = w.position() - start;
    write_body(w);
    let body_len = w.position() - start - header_len;
    let mut header = Vec::with_capacity(header_len);
    write_header(&mut Writer::new(&mut header), body_len);
    debug_assert_eq!(
        header.len(),
        header_len,
        "write_header wrote a different length"
    );
    let n = header.len().min(header_len);
    w.buf[start..start + n].copy_from_slice(&header[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_reads_and_refuses_past_end() {
        let mut r = Reader::new(&[1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(r.u8(), Ok(1));
        assert_eq!(r.u16(), Ok(0x0203));
        assert_eq!(r.u32(), Ok(0x04050607));
        assert!(r.is_empty());
        assert_eq!(
            r.u8(),
            Err(Truncated {
                offset: 7,
                needed: 1,
                available: 0
            })
        );
    }

    #[test]
    fn writer_round_trip_and_patch() {
        let mut v = Vec::new();
        let mut w = Writer::new(&mut v);
        w.u16(0);
        w.u24(0x0a0b0c);
        w.f32(1.5);
        w.patch_u16(0, 0xbeef).unwrap();
        assert!(w.patch_u16(8, 1).is_err());
        w.pad_to(4);
        assert_eq!(v.len(), 12);
        let mut r = Reader::new(&v);
        assert_eq!(r.u16(), Ok(0xbeef));
        assert_eq!(r.u24(), Ok(0x0a0b0c));
        assert_eq!(r.f32(), Ok(1.5));
    }

    #[test]
    fn checksum_rfc1071_example() {
        // RFC 1071 §3: the one's-complement sum of these words is 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(internet_checksum(&data), !0xddf2);
        // A buffer containing its own checksum sums to zero.
        let mut with = data.to_vec();
        with.extend_from_slice(&internet_checksum(&data).to_be_bytes());
        assert_eq!(internet_checksum(&with), 0);
    }

    /// A toy header: one type byte, one length byte counting the body.
    #[derive(Debug, PartialEq)]
    struct Toy(u8, u8);
    impl TlvHeader for Toy {
        type Error = Truncated;
        fn read(r: &mut Reader<'_>) -> Result<Self, Truncated> {
            Ok(Toy(r.u8()?, r.u8()?))
        }
        fn body_len(&self) -> usize {
            usize::from(self.1)
        }
    }

    #[test]
    fn tlv_iter_and_write_tlv() {
        let mut v = Vec::new();
        let mut w = Writer::new(&mut v);
        write_tlv(
            &mut w,
            |w, len| {
                w.u8(7);
                w.u8(len as u8)
            },
            |w| w.bytes(b"abc"),
        );
        write_tlv(
            &mut w,
            |w, len| {
                w.u8(9);
                w.u8(len as u8)
            },
            |_| {},
        );
        let items: Vec<_> = TlvIter::<Toy>::new(&v).collect();
        assert_eq!(
            items,
            vec![Ok((Toy(7, 3), &b"abc"[..])), Ok((Toy(9, 0), &b""[..]))]
        );
        let bad: Vec<_> = TlvIter::<Toy>::new(&[1, 5, 0]).collect();
        assert_eq!(bad.len(), 1);
        assert!(bad[0].is_err());
    }

    // ---- property tests ----

    use proptest::prelude::*;

    /// One `Reader` call, with its argument where it takes one.
    #[derive(Clone, Debug)]
    enum ReadOp {
        Bytes(usize),
        Skip(usize),
        U8,
        U16,
        U24,
        U32,
        U64,
        F32,
        Ipv4,
        Ipv6,
        Array3,
        Rest,
    }

    fn read_op() -> impl Strategy<Value = ReadOp> {
        prop_oneof![
            (0usize..40).prop_map(ReadOp::Bytes),
            any::<usize>().prop_map(ReadOp::Bytes),
            (0usize..40).prop_map(ReadOp::Skip),
            any::<usize>().prop_map(ReadOp::Skip),
            Just(ReadOp::U8),
            Just(ReadOp::U16),
            Just(ReadOp::U24),
            Just(ReadOp::U32),
            Just(ReadOp::U64),
            Just(ReadOp::F32),
            Just(ReadOp::Ipv4),
            Just(ReadOp::Ipv6),
            Just(ReadOp::Array3),
            Just(ReadOp::Rest),
        ]
    }

    /// A value `Writer` can emit and `Reader` read back.
    #[derive(Clone, Debug, PartialEq)]
    enum Field {
        U8(u8),
        U16(u16),
        U24(u32),
        U32(u32),
        U64(u64),
        F32(u32),
        Ip(std::net::IpAddr),
        Bytes(Vec<u8>),
        Zeros(usize),
    }

    fn field() -> impl Strategy<Value = Field> {
        prop_oneof![
            any::<u8>().prop_map(Field::U8),
            any::<u16>().prop_map(Field::U16),
            (0u32..1 << 24).prop_map(Field::U24),
            any::<u32>().prop_map(Field::U32),
            any::<u64>().prop_map(Field::U64),
            any::<u32>().prop_map(Field::F32),
            any::<std::net::IpAddr>().prop_map(Field::Ip),
            prop::collection::vec(any::<u8>(), 0..20).prop_map(Field::Bytes),
            (0usize..20).prop_map(Field::Zeros),
        ]
    }

    fn emit(w: &mut Writer<'_>, f: &Field) {
        match f {
            Field::U8(v) => w.u8(*v),
            Field::U16(v) => w.u16(*v),
            Field::U24(v) => w.u24(*v),
            Field::U32(v) => w.u32(*v),
            Field::U64(v) => w.u64(*v),
            Field::F32(bits) => w.f32(f32::from_bits(*bits)),
            Field::Ip(a) => w.ip(*a),
            Field::Bytes(b) => w.bytes(b),
            Field::Zeros(n) => w.zeros(*n),
        }
    }

    fn parse(r: &mut Reader<'_>, like: &Field) -> Result<Field, Truncated> {
        Ok(match like {
            Field::U8(_) => Field::U8(r.u8()?),
            Field::U16(_) => Field::U16(r.u16()?),
            Field::U24(_) => Field::U24(r.u24()?),
            Field::U32(_) => Field::U32(r.u32()?),
            Field::U64(_) => Field::U64(r.u64()?),
            // Compared as bits: NaN payloads must survive too.
            Field::F32(_) => Field::F32(r.f32()?.to_bits()),
            Field::Ip(std::net::IpAddr::V4(_)) => Field::Ip(r.ipv4()?.into()),
            Field::Ip(std::net::IpAddr::V6(_)) => Field::Ip(r.ipv6()?.into()),
            Field::Bytes(b) => Field::Bytes(r.bytes(b.len())?.to_vec()),
            Field::Zeros(n) => {
                assert_zeros(r.bytes(*n)?);
                Field::Zeros(*n)
            }
        })
    }

    fn assert_zeros(b: &[u8]) {
        assert!(b.iter().all(|&x| x == 0), "zeros read back as {b:?}");
    }

    proptest! {
        #[test]
        fn reader_never_panics_and_accounts_every_byte(
            buf in prop::collection::vec(any::<u8>(), 0..64),
            ops in prop::collection::vec(read_op(), 0..40),
        ) {
            let mut r = Reader::new(&buf);
            for op in &ops {
                let before = r.position();
                let want = match op {
                    ReadOp::Bytes(n) | ReadOp::Skip(n) => *n,
                    ReadOp::U8 => 1,
                    ReadOp::U16 => 2,
                    ReadOp::U24 | ReadOp::Array3 => 3,
                    ReadOp::U32 | ReadOp::F32 | ReadOp::Ipv4 => 4,
                    ReadOp::U64 => 8,
                    ReadOp::Ipv6 => 16,
                    ReadOp::Rest => 0,
                };
                let ok = match op {
                    ReadOp::Bytes(n) => r.bytes(*n).map(|b| assert_eq!(b.len(), *n)).is_ok(),
                    ReadOp::Skip(n) => r.skip(*n).is_ok(),
                    ReadOp::U8 => r.u8().is_ok(),
                    ReadOp::U16 => r.u16().is_ok(),
                    ReadOp::U24 => r.u24().is_ok(),
                    ReadOp::U32 => r.u32().is_ok(),
                    ReadOp::U64 => r.u64().is_ok(),
                    ReadOp::F32 => r.f32().is_ok(),
                    ReadOp::Ipv4 => r.ipv4().is_ok(),
                    ReadOp::Ipv6 => r.ipv6().is_ok(),
                    ReadOp::Array3 => r.array::<3>().is_ok(),
                    ReadOp::Rest => {
                        prop_assert_eq!(r.rest(), &buf[before..]);
                        true
                    }
                };
                // A read either takes exactly what it asked for or nothing at all.
                prop_assert_eq!(ok, want <= buf.len() - before);
                prop_assert_eq!(r.position(), if ok { before + want } else { before });
                prop_assert_eq!(r.position() + r.remaining(), buf.len());
                prop_assert_eq!(r.is_empty(), r.remaining() == 0);
            }
        }

        #[test]
        fn writer_reader_round_trip(fields in prop::collection::vec(field(), 0..30), align in 0usize..9) {
            let mut buf = Vec::new();
            let mut w = Writer::new(&mut buf);
            for f in &fields {
                emit(&mut w, f);
            }
            let end = w.position();
            w.pad_to(align);
            prop_assert_eq!(w.position() % align.max(1), 0);
            prop_assert!(w.position() - end < align.max(1));
            let mut r = Reader::new(&buf);
            for f in &fields {
                prop_assert_eq!(&parse(&mut r, f).unwrap(), f);
            }
            prop_assert_eq!(r.position(), end);
            prop_assert!(r.rest().iter().all(|&b| b == 0));
        }

        #[test]
        fn patch_u16_never_panics(len in 0usize..8, pos in any::<usize>(), small in 0usize..10, v: u16) {
            let mut buf = vec![0xa5; len];
            let mut w = Writer::new(&mut buf);
            for p in [pos, small] {
                let fits = p.checked_add(2).is_some_and(|e| e <= len);
                prop_assert_eq!(w.patch_u16(p, v).is_ok(), fits);
                if fits {
                    prop_assert_eq!(&w.written()[p..p + 2], &v.to_be_bytes()[..]);
                }
            }
            prop_assert_eq!(buf.len(), len);
        }

        #[test]
        fn tlv_iter_never_panics_or_reads_past_the_buffer(
            buf in prop::collection::vec(any::<u8>(), 0..300),
        ) {
            let range = buf.as_ptr_range();
            let mut iter = TlvIter::<Toy>::new(&buf);
            let mut consumed = 0;
            let mut failed = false;
            for item in iter.by_ref() {
                prop_assert!(!failed, "an item after an error");
                match item {
                    Ok((h, body)) => {
                        prop_assert_eq!(body.len(), h.body_len());
                        let body_range = body.as_ptr_range();
                        prop_assert!(range.start <= body_range.start && body_range.end <= range.end);
                        // Bodies follow their 2-byte headers back to back.
                        prop_assert_eq!(body_range.start as usize - range.start as usize, consumed + 2);
                        consumed += 2 + body.len();
                    }
                    Err(_) => failed = true,
                }
            }
            prop_assert!(consumed <= buf.len());
            prop_assert!(failed || consumed == buf.len());
            prop_assert!(iter.next().is_none());
            prop_assert!(iter.position() <= buf.len());
        }

        #[test]
        fn write_tlv_round_trips_through_tlv_iter(
            bodies in prop::collection::vec((any::<u8>(), prop::collection::vec(any::<u8>(), 0..255)), 0..10),
        ) {
            let mut buf = Vec::new();
            let mut w = Writer::new(&mut buf);
            for (t, body) in &bodies {
                write_tlv(&mut w, |w, len| {
                    w.u8(*t);
                    w.u8(len as u8)
                }, |w| w.bytes(body));
            }
            let got: Vec<_> = TlvIter::<Toy>::new(&buf)
                .map(|item| item.map(|(h, b)| (h.0, b.to_vec())))
                .collect::<Result<_, _>>()
                .unwrap();
            prop_assert_eq!(got, bodies);
        }
    }
}
