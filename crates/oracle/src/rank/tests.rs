use super::*;
use proptest::prelude::*;

fn metrics() -> PathMetrics {
    PathMetrics {
        bandwidth: 100.0,
        latency: 12.5,
        hops: 4,
        weight: 9,
        as_number: 680,
        as_distance: 2,
        congestion: 0.25,
        external: true,
    }
}

fn eval(src: &str) -> f64 {
    CostExpr::compile(src).unwrap().eval(&metrics())
}

fn err(src: &str) -> ExprError {
    CostExpr::compile(src).unwrap_err()
}

#[test]
fn seed_eq3_as_builtin_and_as_expression() {
    let m = metrics();
    let want = 8.0 * 2.0 + 0.5 * 4.0 + 10.0 / 100.0;
    assert_eq!(Ranking::Seed.cost(&m), want);
    assert_eq!(eval("8*as_distance + 0.5*hops + 10/bandwidth"), want);
    assert_eq!(Ranking::parse("seed").unwrap(), Ranking::Seed);
    assert_eq!(Ranking::parse(" latency-first ").unwrap().cost(&m), 12.5);
    assert_eq!(Ranking::parse("fewest-hops").unwrap().cost(&m), 6.0);
    assert_eq!(Ranking::parse("lowest-weight").unwrap().cost(&m), 9.0);
    assert_eq!(Ranking::parse("widest-bandwidth").unwrap().cost(&m), 0.01);
    for (name, r) in BUILT_IN {
        assert_eq!(r.text(), *name);
    }
    let e = Ranking::parse("hops * 2").unwrap();
    assert_eq!(e.text(), "hops * 2");
}

#[test]
fn operators_functions_and_precedence() {
    assert_eq!(eval("1 + 2 * 3"), 7.0);
    assert_eq!(eval("(1 + 2) * 3"), 9.0);
    assert_eq!(eval("2 ^ 3 ^ 2"), 512.0);
    assert_eq!(eval("-2 ^ 2"), -4.0);
    assert_eq!(eval("10 - 4 - 3"), 3.0);
    assert_eq!(eval("7 % 4"), 3.0);
    assert_eq!(eval("min(3, hops, 9)"), 3.0);
    assert_eq!(eval("max(latency)"), 12.5);
    assert_eq!(eval("abs(-3) + sqrt(16) + ln(1) + log10(100)"), 9.0);
    assert_eq!(eval("clamp(latency, 0, 10)"), 10.0);
    assert_eq!(eval("if(external and as_distance >= 2, 1, 0)"), 1.0);
    assert_eq!(eval("if(internal || hops == 4, 5, 6)"), 5.0);
    assert_eq!(eval("if(not external, 1, 2)"), 2.0);
    assert_eq!(eval("if(!(hops != 4) && true, 1e3, 0)"), 1000.0);
    assert_eq!(
        eval("total_hops + weight + as_number + congestion"),
        6.0 + 9.0 + 680.0 + 0.25
    );
    assert_eq!(eval("if(hops < 5, if(hops > 3, 1, 2), 3)"), 1.0);
    assert!(eval("1 / 0").is_infinite());
}

#[test]
fn errors_name_the_column() {
    let e = err("8*as_distanse + 1");
    assert_eq!(e.column, 3);
    assert!(matches!(e.kind, ExprErrorKind::UnknownName(ref n) if n == "as_distanse"));
    assert!(
        e.to_string()
            .starts_with("cost expression, column 3: unknown name")
    );
    assert_eq!(err("hops + ").column, 8);
    assert_eq!(err("hops $ 2").column, 6);
    assert_eq!(err("(hops + 1").column, 10);
    assert_eq!(err("hops + external").column, 8);
    assert!(matches!(
        err("hops + external").kind,
        ExprErrorKind::Type { .. }
    ));
    assert_eq!(err("if(hops, 1, 2)").column, 4);
    assert_eq!(err("if(external, 1, true)").column, 17);
    assert!(matches!(err("hops > 2").kind, ExprErrorKind::NotANumber));
    assert!(matches!(
        err("abs(1, 2)").kind,
        ExprErrorKind::Arity { found: 2, .. }
    ));
    assert!(matches!(err("   ").kind, ExprErrorKind::Empty));
    assert!(matches!(err("1e999").kind, ExprErrorKind::BadNumber(_)));
    assert!(matches!(
        err("hops 2").kind,
        ExprErrorKind::Unexpected { .. }
    ));
    assert_eq!(err("hops 2").column, 6);
    assert!(matches!(err(&"(".repeat(100)).kind, ExprErrorKind::TooDeep));
    assert!(matches!(
        err(&"1+".repeat(3000)).kind,
        ExprErrorKind::TooLong
    ));
    // Columns count characters, not bytes.
    assert_eq!(err("ä + hops").column, 1);
    assert_eq!(err("1 + ü").column, 5);
}

#[test]
fn order_keys_sort_like_costs() {
    let costs = [
        f64::NEG_INFINITY,
        -2.5,
        -0.0,
        0.0,
        1e-300,
        3.0,
        f64::INFINITY,
    ];
    for w in costs.windows(2) {
        assert!(order_key(Some(w[0])) <= order_key(Some(w[1])), "{w:?}");
    }
    assert_eq!(order_key(Some(-0.0)), order_key(Some(0.0)));
    assert_eq!(order_key(Some(f64::NAN)), order_key(Some(f64::INFINITY)));
    assert!(order_key(Some(f64::INFINITY)) < order_key(None));
}

fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "hops",
        "latency",
        "bandwidth",
        "external",
        "true",
        "1",
        "2.5",
        "1e3",
        "+",
        "-",
        "*",
        "/",
        "%",
        "^",
        "<",
        "<=",
        "==",
        "!=",
        "and",
        "or",
        "not",
        "!",
        "(",
        ")",
        ",",
        "min(",
        "max(",
        "if(",
        "clamp(",
        "abs(",
        "sqrt(",
        "foo",
        "$",
    ])
}

proptest! {
    #[test]
    fn compile_never_panics_on_token_soup(tokens in prop::collection::vec(token(), 0..30)) {
        let src = tokens.join(" ");
        if let Ok(e) = CostExpr::compile(&src) {
            let _ = e.eval(&metrics());
        }
    }

    #[test]
    fn compile_never_panics_on_bytes(src in "\\PC{0,60}") {
        if let Ok(e) = CostExpr::compile(&src) {
            let _ = e.eval(&metrics());
        }
    }

    #[test]
    fn order_keys_are_monotonic(a in any::<f64>(), b in any::<f64>()) {
        let fix = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
        let (a, b) = (fix(a), fix(b));
        if a < b {
            prop_assert!(order_key(Some(a)) < order_key(Some(b)));
        }
    }
}

fn key_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        // Few distinct keys: many ties.
        3 => (0u64..6).prop_map(|k| order_key(Some(k as f64 * 0.5))),
        // Keys that differ only in their lowest bits (the fallback).
        2 => (0u64..4, 0u64..1024).prop_map(|(hi, lo)| (hi << 20) | lo),
        1 => Just(u64::MAX),
        2 => any::<u64>(),
    ]
}

proptest! {
    #[test]
    fn sort_order_is_by_key_then_index(keys in prop::collection::vec(key_strategy(), 0..600)) {
        let mut order = vec![0u64; keys.len() + 3];
        order[keys.len()..].fill(7);
        sort_order(&keys, &mut order);
        let mut want: Vec<(u64, u64)> = keys.iter().enumerate().map(|(i, &k)| (k, i as u64)).collect();
        want.sort_unstable();
        let want: Vec<u64> = want.into_iter().map(|(_, i)| i).collect();
        prop_assert_eq!(&order[..keys.len()], &want[..]);
        prop_assert!(order[keys.len()..].iter().all(|&x| x == 7));
    }

    #[test]
    fn sort_order_counts_few_distinct_keys(
        values in prop::collection::vec(any::<u64>(), 1..40),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..600),
    ) {
        // Up to 39 distinct values, any of them colliding in the counting sort's table: below
        // `FEW` the counting sort answers, above it the comparison sort does.
        let keys: Vec<u64> = picks.iter().map(|p| *p.get(&values)).collect();
        let mut order = vec![0u64; keys.len()];
        sort_order(&keys, &mut order);
        let mut want: Vec<(u64, u64)> = keys.iter().enumerate().map(|(i, &k)| (k, i as u64)).collect();
        want.sort_unstable();
        let want: Vec<u64> = want.into_iter().map(|(_, i)| i).collect();
        prop_assert_eq!(order, want);
    }
}

#[test]
fn counting_sort_takes_few_values_and_gives_up_on_more() {
    let few: Vec<u64> = (0..300)
        .map(|i| order_key(Some(f64::from(i % 32 * 7 % 32))))
        .collect();
    let mut order = vec![0u64; few.len()];
    assert!(count_few(&few, &mut order));
    assert!(
        order
            .windows(2)
            .all(|w| (few[w[0] as usize], w[0]) < (few[w[1] as usize], w[1]))
    );
    let many: Vec<u64> = (0..33).collect();
    assert!(!count_few(&many, &mut vec![0; 33]));
    let long = vec![5u64; FEW_CANDIDATES + 1];
    assert!(!count_few(&long, &mut vec![0; long.len()]));
    // Both still sorted by `sort_order`.
    let mut order = vec![0u64; 33];
    sort_order(&many, &mut order);
    assert_eq!(order, (0..33).collect::<Vec<_>>());
}
