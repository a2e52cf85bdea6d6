use super::*;

fn emitted(a: &Adspec) -> Vec<u8> {
    let mut v = vec![0xa5; 3];
    a.emit(&mut Writer::new(&mut v));
    assert_eq!(&v[..3], &[0xa5; 3]);
    let v = v.split_off(3);
    assert_eq!(v.len(), a.buffer_len());
    v
}

/// RFC 2210 §3.3: an ADSPEC with only the default general parameters fragment. Length 44,
/// class 13, C-Type 2.
const GENERAL_ONLY: [u8; 44] = [
    0x00, 0x2c, 0x0d, 0x02, // object header
    0x00, 0x00, 0x00, 0x09, // (a) version 0, (b) 9 words follow
    0x01, 0x00, 0x00, 0x08, // (c) service 1, no break bit, (d) 8 words
    0x04, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, // (e) IS hop count = 3
    0x06, 0x00, 0x00, 0x01, 0x4b, 0x18, 0x96, 0x80, // (h) path b/w = 1e7 B/s
    0x08, 0x00, 0x00, 0x01, 0x00, 0x00, 0x03, 0xe8, // (k) min latency = 1000 us
    0x0a, 0x00, 0x00, 0x01, 0x00, 0x00, 0x05, 0xdc, // (n) composed MTU = 1500
];

fn general_only() -> Adspec {
    Adspec {
        general: GeneralParameters {
            break_bit: false,
            hop_count: 3,
            path_bw: 1e7,
            min_latency_us: 1000,
            mtu: 1500,
            unknown: vec![],
        },
        guaranteed: None,
        controlled_load: None,
        other: vec![],
    }
}

#[test]
fn general_fragment_only() {
    let a = general_only();
    assert_eq!(Adspec::parse(2, &GENERAL_ONLY[4..]), Ok(a.clone()));
    assert_eq!(emitted(&a), GENERAL_ONLY);
}

#[test]
fn sender_adspec_with_both_services() {
    // new_at_sender(true, true) with the break bit set and Guaranteed terms filled in: general
    // (36 bytes) + Guaranteed (4 + 32) + Controlled-Load (header only, 4) = 76 bytes = 19 words.
    let expected = [
        0x00, 0x54, 0x0d, 0x02, // object header, length 84
        0x00, 0x00, 0x00, 0x13, // version 0, 19 words
        0x01, 0x80, 0x00, 0x08, // service 1, break bit, 8 words
        0x04, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // hop count 0
        0x06, 0x00, 0x00, 0x01, 0x7f, 0x80, 0x00, 0x00, // path b/w +infinity
        0x08, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // latency 0
        0x0a, 0x00, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, // MTU 65535
        0x02, 0x00, 0x00, 0x08, // service 2, 8 words
        0x85, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, // 133 Ctot = 5
        0x86, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x06, // 134 Dtot = 6
        0x87, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07, // 135 Csum = 7
        0x88, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08, // 136 Dsum = 8
        0x05, 0x00, 0x00, 0x00, // service 5, no data
    ];
    let mut a = Adspec::new_at_sender(true, true);
    a.set_break_bit();
    if let Some(g) = a.guaranteed.as_mut() {
        g.errors = Some(ErrorTerms {
            c_tot: 5,
            d_tot: 6,
            c_sum: 7,
            d_sum: 8,
        });
    }
    assert_eq!(emitted(&a), expected);
    assert_eq!(Adspec::parse(2, &expected[4..]), Ok(a));
}

#[test]
fn unknown_parameters_and_fragments_survive() {
    let mut a = general_only();
    a.general.unknown.push(IntServParam {
        id: 200,
        flags: 0x01,
        data: vec![1, 2, 3, 4],
    });
    a.guaranteed = Some(GuaranteedAdspec {
        break_bit: true,
        errors: None,
        overrides: Overrides {
            mtu: Some(576),
            ..Overrides::default()
        },
        unknown: vec![],
    });
    a.controlled_load = Some(ControlledLoadAdspec {
        break_bit: false,
        overrides: Overrides {
            hop_count: Some(1),
            path_bw: Some(f32::INFINITY),
            min_latency_us: Some(7),
            mtu: None,
        },
        unknown: vec![IntServParam {
            id: 77,
            flags: 0,
            data: vec![],
        }],
    });
    a.other.push(ServiceFragment {
        service: 9,
        flags: 0x80,
        data: vec![9; 8],
    });
    let bytes = emitted(&a);
    assert_eq!(Adspec::parse(2, &bytes[4..]), Ok(a));
    // The Guaranteed fragment is a header with the break bit, then the MTU override.
    let gs = 4 + 4 + 36 + 8;
    assert_eq!(
        bytes[gs..gs + 12],
        [
            0x02, 0x80, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x01, 0x00, 0x00, 0x02, 0x40
        ]
    );
}

#[test]
fn fragments_in_any_order() {
    // Controlled-Load before the general fragment.
    let mut bytes = GENERAL_ONLY[..8].to_vec();
    bytes[7] = 10;
    bytes.extend_from_slice(&[0x05, 0x00, 0x00, 0x00]);
    bytes.extend_from_slice(&GENERAL_ONLY[8..]);
    bytes[1] = 48;
    let mut a = general_only();
    a.controlled_load = Some(ControlledLoadAdspec::default());
    assert_eq!(Adspec::parse(2, &bytes[4..]), Ok(a));
}

fn adspec_err(edit: impl FnOnce(&mut Vec<u8>)) -> ParseErrorKind {
    let mut obj = GENERAL_ONLY.to_vec();
    edit(&mut obj);
    Adspec::parse(2, &obj[4..]).unwrap_err()
}

#[test]
fn errors() {
    use IntServFault::*;
    let bad = ParseErrorKind::BadAdspec;
    assert_eq!(
        Adspec::parse(1, &GENERAL_ONLY[4..]),
        Err(ParseErrorKind::UnknownCType {
            class: 13,
            ctype: 1
        })
    );
    let e = adspec_err(|o| o[4] = 0x20);
    assert_eq!(e, bad(BadVersion(2)));
    assert_eq!(e.error_code(), Some((21, 5)));
    assert_eq!(e.reason(), "bad_adspec");
    // Service 1 renamed to an unknown service: the general fragment is missing.
    assert_eq!(adspec_err(|o| o[8] = 3), bad(MissingService(1)));
    // Path b/w NaN, then negative.
    for v in [f32::NAN, -2.0] {
        assert_eq!(
            adspec_err(|o| o[24..28].copy_from_slice(&v.to_bits().to_be_bytes())),
            bad(InvalidValue {
                service: 1,
                param: 6,
                bits: v.to_bits()
            })
        );
    }
    // MTU parameter renamed to an unknown one: parameter 10 is missing.
    assert_eq!(
        adspec_err(|o| o[36] = 11),
        bad(MissingParameter {
            service: 1,
            param: 10
        })
    );
    // Hop count twice.
    assert_eq!(
        adspec_err(|o| o[20] = 4),
        bad(BadParameter {
            service: 1,
            param: 4
        })
    );
    // Hop count with a 2-word length (swallowing the next header).
    assert_eq!(
        adspec_err(|o| o[15] = 2),
        bad(BadParameter {
            service: 1,
            param: 4
        })
    );
    // Service length past the end of the object.
    assert_eq!(
        adspec_err(|o| o[11] = 9),
        bad(BadLength {
            declared: 36,
            available: 32
        })
    );
    // Overall length disagreeing with the object.
    assert_eq!(
        adspec_err(|o| o[7] = 8),
        bad(BadLength {
            declared: 32,
            available: 36
        })
    );
}

#[test]
fn guaranteed_fragment_errors() {
    use IntServFault::*;
    let bad = ParseErrorKind::BadAdspec;
    let mut a = general_only();
    a.guaranteed = Some(GuaranteedAdspec {
        break_bit: false,
        errors: Some(ErrorTerms::default()),
        overrides: Overrides::default(),
        unknown: vec![],
    });
    let bytes = emitted(&a);
    let gs = 4 + 4 + 36; // offset of the Guaranteed service header
    // Dtot renamed to Ctot: duplicate.
    let mut dup = bytes.clone();
    dup[gs + 12] = 133;
    assert_eq!(
        Adspec::parse(2, &dup[4..]),
        Err(bad(BadParameter {
            service: 2,
            param: 133
        }))
    );
    // Dtot renamed to an unknown parameter: the terms are incomplete.
    let mut partial = bytes.clone();
    partial[gs + 12] = 150;
    assert_eq!(
        Adspec::parse(2, &partial[4..]),
        Err(bad(MissingParameter {
            service: 2,
            param: 134
        }))
    );
    // Two Guaranteed fragments.
    let mut two = bytes.clone();
    two.extend_from_slice(&[0x02, 0x00, 0x00, 0x00]);
    two[1] += 4;
    two[7] += 1;
    assert_eq!(Adspec::parse(2, &two[4..]), Err(bad(DuplicateService(2))));
}

#[test]
fn new_at_sender_values() {
    let a = Adspec::new_at_sender(true, false);
    assert!(!a.general.break_bit);
    assert_eq!(a.general.hop_count, 0);
    assert_eq!(a.general.path_bw, f32::INFINITY);
    assert_eq!(a.general.min_latency_us, 0);
    assert_eq!(a.general.mtu, Adspec::INITIAL_PATH_MTU);
    assert_eq!(
        a.guaranteed.as_ref().and_then(|g| g.errors),
        Some(ErrorTerms::default())
    );
    assert!(a.controlled_load.is_none());
    let a = Adspec::new_at_sender(false, true);
    assert!(a.guaranteed.is_none());
    assert_eq!(a.controlled_load, Some(ControlledLoadAdspec::default()));
    let bytes = emitted(&a);
    assert_eq!(Adspec::parse(2, &bytes[4..]), Ok(a));
}

#[test]
fn compose_rules() {
    let mut a = Adspec::new_at_sender(true, true);
    if let Some(c) = a.controlled_load.as_mut() {
        c.overrides.path_bw = Some(2e5);
    }
    let hop1 = HopCharacteristics {
        bandwidth: 1e6,
        latency_us: 100,
        mtu: 1500,
        c: 10,
        d: 20,
    };
    let hop2 = HopCharacteristics {
        bandwidth: 5e5,
        latency_us: 50,
        mtu: 9000,
        c: 1,
        d: 2,
    };
    a.compose(&hop1);
    a.compose(&hop2);
    let g = &a.general;
    assert_eq!(
        (g.hop_count, g.path_bw, g.min_latency_us, g.mtu),
        (2, 5e5, 150, 1500)
    );
    assert_eq!(
        a.guaranteed.as_ref().and_then(|g| g.errors),
        Some(ErrorTerms {
            c_tot: 11,
            d_tot: 22,
            c_sum: 11,
            d_sum: 22
        })
    );
    let cl = a.controlled_load.as_ref().map(|c| c.overrides);
    assert_eq!(
        cl,
        Some(Overrides {
            path_bw: Some(2e5),
            ..Overrides::default()
        })
    );
    // Latency and error terms clamp at 2^32 - 1; a NaN link bandwidth counts as 0.
    a.general.min_latency_us = Adspec::INDETERMINATE_LATENCY - 1;
    a.compose(&HopCharacteristics {
        bandwidth: f32::NAN,
        latency_us: 10,
        mtu: u32::MAX,
        c: u32::MAX,
        d: 0,
    });
    assert_eq!(a.general.min_latency_us, Adspec::INDETERMINATE_LATENCY);
    assert_eq!(a.general.path_bw, 0.0);
    assert_eq!(
        a.guaranteed
            .as_ref()
            .and_then(|g| g.errors)
            .map(|t| t.c_tot),
        Some(u32::MAX)
    );
    // Break bit is only set on request.
    assert!(!a.general.break_bit);
    a.set_break_bit();
    assert!(a.general.break_bit);
    let bytes = emitted(&a);
    assert_eq!(Adspec::parse(2, &bytes[4..]), Ok(a));
}
