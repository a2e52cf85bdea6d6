//! SENDER_TSPEC and FLOWSPEC byte vectors (RFC 2210 §3.1–§3.3) and every way they are refused.

use super::*;

/// r = 125000 B/s (1 Mbit/s), b = 1000 B, p = +infinity, m = 64, M = 1500.
const BUCKET: [u8; 20] = [
    0x47, 0xf4, 0x24, 0x00, // r = 125000.0
    0x44, 0x7a, 0x00, 0x00, // b = 1000.0
    0x7f, 0x80, 0x00, 0x00, // p = +infinity
    0x00, 0x00, 0x00, 0x40, // m = 64
    0x00, 0x00, 0x05, 0xdc, // M = 1500
];

fn bucket() -> TokenBucket {
    TokenBucket {
        rate: 125_000.0,
        bucket: 1000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn emitted(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut v = vec![0xa5; 3];
    f(&mut Writer::new(&mut v));
    assert_eq!(&v[..3], &[0xa5; 3]);
    v.split_off(3)
}

/// RFC 2210 §3.1: SENDER_TSPEC, length 36, class 12, C-Type 2.
fn tspec_bytes() -> Vec<u8> {
    let mut v = vec![
        0x00, 0x24, 0x0c, 0x02, // object header
        0x00, 0x00, 0x00, 0x07, // (a) version 0, (b) overall length 7 words
        0x01, 0x00, 0x00, 0x06, // (c) service 1, (d) 6 words
        0x7f, 0x00, 0x00, 0x05, // (e) parameter 127, (f) flags 0, (g) 5 words
    ];
    v.extend_from_slice(&BUCKET);
    v
}

#[test]
fn sender_tspec() {
    let obj = tspec_bytes();
    let t = SenderTspec(bucket());
    assert_eq!(SenderTspec::parse(2, &obj[4..]), Ok(t));
    assert_eq!(t.buffer_len(), obj.len());
    assert_eq!(emitted(|w| t.emit(w)), obj);
}

#[test]
fn flowspec_controlled_load() {
    // RFC 2210 §3.2: Controlled-Load FLOWSPEC, length 36, class 9, C-Type 2, service 5.
    let mut obj = vec![
        0x00, 0x24, 0x09, 0x02, 0x00, 0x00, 0x00, 0x07, 0x05, 0x00, 0x00, 0x06, 0x7f, 0x00, 0x00,
        0x05,
    ];
    obj.extend_from_slice(&BUCKET);
    let f = FlowSpec::ControlledLoad(bucket());
    assert_eq!(FlowSpec::parse(2, &obj[4..]), Ok(f));
    assert_eq!(f.buffer_len(), obj.len());
    assert_eq!(emitted(|w| f.emit(w)), obj);
}

#[test]
fn flowspec_guaranteed() {
    // RFC 2210 §3.3 figure: Guaranteed FLOWSPEC, length 48, overall 10 words, service 2 with
    // 9 words: token bucket (127) then RSpec (130): R = 250000 B/s, S = 100 us.
    let mut obj = vec![
        0x00, 0x30, 0x09, 0x02, 0x00, 0x00, 0x00, 0x0a, 0x02, 0x00, 0x00, 0x09, 0x7f, 0x00, 0x00,
        0x05,
    ];
    obj.extend_from_slice(&BUCKET);
    obj.extend_from_slice(&[
        0x82, 0x00, 0x00, 0x02, // (h) parameter 130, (i) flags, (j) 2 words
        0x48, 0x74, 0x24, 0x00, // R = 250000.0
        0x00, 0x00, 0x00, 0x64, // S = 100
    ]);
    let f = FlowSpec::Guaranteed {
        tspec: bucket(),
        rate: 250_000.0,
        slack: 100,
    };
    assert_eq!(FlowSpec::parse(2, &obj[4..]), Ok(f));
    assert_eq!(f.buffer_len(), obj.len());
    assert_eq!(emitted(|w| f.emit(w)), obj);
    assert_eq!(f.reserved_rate(), 250_000.0);
    // RSpec before the token bucket is accepted.
    let mut swapped = obj[..12].to_vec();
    swapped.extend_from_slice(&obj[36..48]);
    swapped.extend_from_slice(&obj[12..36]);
    assert_eq!(FlowSpec::parse(2, &swapped[4..]), Ok(f));
}

fn tspec_err(edit: impl FnOnce(&mut Vec<u8>)) -> ParseErrorKind {
    let mut obj = tspec_bytes();
    edit(&mut obj);
    SenderTspec::parse(2, &obj[4..]).unwrap_err()
}

#[test]
fn sender_tspec_errors() {
    use IntServFault::*;
    let bad = ParseErrorKind::BadTspec;
    assert_eq!(
        SenderTspec::parse(1, &tspec_bytes()[4..]),
        Err(ParseErrorKind::UnknownCType {
            class: 12,
            ctype: 1
        })
    );
    assert_eq!(tspec_err(|o| o[4] = 0x10), bad(BadVersion(1)));
    assert_eq!(
        tspec_err(|o| o[7] = 8),
        bad(BadLength {
            declared: 32,
            available: 28
        })
    );
    assert_eq!(
        tspec_err(|o| o[11] = 7),
        bad(BadLength {
            declared: 28,
            available: 24
        })
    );
    assert_eq!(tspec_err(|o| o[8] = 5), bad(UnsupportedService(5)));
    assert_eq!(
        tspec_err(|o| o[12] = 128),
        bad(UnknownParameter {
            service: 1,
            param: 128
        })
    );
    // A 4-word token bucket followed by a stray word read as an empty parameter.
    assert_eq!(
        tspec_err(|o| o[15] = 4),
        bad(BadParameter {
            service: 1,
            param: 127
        })
    );
    assert_eq!(
        tspec_err(|o| o[16..20].copy_from_slice(&f32::NAN.to_bits().to_be_bytes())),
        bad(InvalidValue {
            service: 1,
            param: 127,
            bits: f32::NAN.to_bits()
        })
    );
    assert_eq!(
        tspec_err(|o| o[20..24].copy_from_slice(&(-1.0f32).to_bits().to_be_bytes())),
        bad(InvalidValue {
            service: 1,
            param: 127,
            bits: (-1.0f32).to_bits()
        })
    );
    assert_eq!(
        tspec_err(|o| o[16..20].copy_from_slice(&f32::INFINITY.to_bits().to_be_bytes())),
        bad(InvalidValue {
            service: 1,
            param: 127,
            bits: f32::INFINITY.to_bits()
        })
    );
    // m = 2000 > M = 1500.
    assert_eq!(
        tspec_err(|o| o[28..32].copy_from_slice(&2000u32.to_be_bytes())),
        bad(InvalidValue {
            service: 1,
            param: 127,
            bits: 2000
        })
    );
    // An empty service 1 fragment, then no fragment at all, then two fragments.
    let empty = [0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00];
    assert_eq!(
        SenderTspec::parse(2, &empty),
        Err(bad(MissingParameter {
            service: 1,
            param: 127
        }))
    );
    assert_eq!(
        SenderTspec::parse(2, &[0, 0, 0, 0]),
        Err(bad(MissingService(0)))
    );
    let mut two = tspec_bytes()[4..].to_vec();
    two[3] = 8;
    two.extend_from_slice(&[0x01, 0x00, 0x00, 0x00]);
    assert_eq!(SenderTspec::parse(2, &two), Err(bad(ExtraService(1))));
    let mut dup = tspec_bytes()[4..].to_vec();
    dup[3] = 13;
    dup[7] = 12;
    dup.extend_from_slice(&tspec_bytes()[12..]);
    assert_eq!(
        SenderTspec::parse(2, &dup),
        Err(bad(BadParameter {
            service: 1,
            param: 127
        }))
    );
    assert_eq!(
        SenderTspec::parse(2, &[0, 0]),
        Err(bad(BadLength {
            declared: 2,
            available: 0
        }))
    );
}

#[test]
fn flowspec_errors() {
    use IntServFault::*;
    let bad = ParseErrorKind::BadFlowspec;
    let cl = FlowSpec::ControlledLoad(bucket());
    let mut obj = Vec::new();
    cl.emit(&mut Writer::new(&mut obj));
    assert_eq!(
        FlowSpec::parse(1, &obj[4..]),
        Err(ParseErrorKind::UnknownCType { class: 9, ctype: 1 })
    );
    let mut other = obj.clone();
    other[8] = 3;
    let e = FlowSpec::parse(2, &other[4..]).unwrap_err();
    assert_eq!(e, bad(UnsupportedService(3)));
    assert_eq!(e.error_code(), Some((21, 2)));
    // A Guaranteed fragment without its RSpec.
    let mut gs = obj.clone();
    gs[8] = 2;
    let e = FlowSpec::parse(2, &gs[4..]).unwrap_err();
    assert_eq!(
        e,
        bad(MissingParameter {
            service: 2,
            param: 130
        })
    );
    assert_eq!(e.error_code(), Some((21, 3)));
    // An RSpec in a Controlled-Load fragment; a NaN RSpec rate.
    let g = FlowSpec::Guaranteed {
        tspec: bucket(),
        rate: 1.0,
        slack: 0,
    };
    let mut obj = Vec::new();
    g.emit(&mut Writer::new(&mut obj));
    let mut as_cl = obj.clone();
    as_cl[8] = 5;
    assert_eq!(
        FlowSpec::parse(2, &as_cl[4..]),
        Err(bad(UnknownParameter {
            service: 5,
            param: 130
        }))
    );
    let mut nan = obj.clone();
    nan[40..44].copy_from_slice(&f32::NAN.to_bits().to_be_bytes());
    assert_eq!(
        FlowSpec::parse(2, &nan[4..]),
        Err(bad(InvalidValue {
            service: 2,
            param: 130,
            bits: f32::NAN.to_bits()
        }))
    );
    let mut short_rspec = obj.clone();
    short_rspec[39] = 1;
    assert!(matches!(
        FlowSpec::parse(2, &short_rspec[4..]),
        Err(ParseErrorKind::BadFlowspec(BadParameter {
            service: 2,
            param: 130
        }))
    ));
    // An empty fragment of an unknown service.
    assert_eq!(
        FlowSpec::parse(2, &[0, 0, 0, 1, 9, 0, 0, 0]),
        Err(bad(UnsupportedService(9)))
    );
}
