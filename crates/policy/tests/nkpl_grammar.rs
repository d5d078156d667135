//! NKPL read as KATch's grammar reads it: every pair of binary operators groups as KATch's
//! precedence and left folds say, random expressions printed with all their parentheses and
//! with only the ones KATch's precedence needs build the same program, and one regression
//! test for each way rampart once read NKPL differently from KATch.

use std::path::Path;

use proptest::prelude::*;
use rampart_policy::nkpl::grammar::parse_expr;
use rampart_policy::nkpl::{Check, Event, Session};

/// Runs NKPL text; the checks it made, or the error.
fn run(text: &str) -> Result<Vec<Check>, rampart_policy::nkpl::Error> {
    let mut s = Session::new();
    let mut out = Vec::new();
    s.run_text(Path::new("t.nkpl"), text, &mut |e| {
        if let Event::Check(c) = e {
            out.push(c);
        }
    })?;
    Ok(out)
}

/// Whether `check a ≡ b` holds.
fn equivalent(a: &str, b: &str) -> bool {
    let checks = run(&format!("check {a} ≡ {b}\n")).unwrap_or_else(|e| panic!("{e}\n{a}\n{b}"));
    checks[0].holds()
}

/// The binary operators: (spellings, precedence level; higher binds tighter).
const OPS: &[(&[&str], u8)] = &[
    (&["∪", "+", "|", "∨"], 1),
    (&["⋅", ";", "∧"], 2),
    (&["⊕", "^", "xor"], 3),
    (&["∩", "intersect"], 3),
    (&["∖", "-"], 3),
];

/// Small programs: tests, assignments and dup over two fields, in parentheses.
fn program(seed: u64) -> String {
    let atoms = ["@a=0", "@a=1", "@a=2", "@b=0", "@b=1", "@a←0", "@a←1", "@b←1", "δ", "ε", "@a≠1"];
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let n = 1 + next() % 3;
    let mut parts = Vec::new();
    for _ in 0..n {
        let a = atoms[(next() % atoms.len() as u64) as usize];
        let b = atoms[(next() % atoms.len() as u64) as usize];
        parts.push(if next() % 2 == 0 { format!("{a}⋅{b}") } else { a.to_string() });
    }
    format!("({})", parts.join(" ∪ "))
}

#[test]
fn every_pair_of_binary_operators_groups_as_katch_does() {
    let mut differs = 0;
    for (i, (s1, l1)) in OPS.iter().enumerate() {
        for (j, (s2, l2)) in OPS.iter().enumerate() {
            // KATch: one left fold per level, tighter levels first.
            let left_first = l1 >= l2;
            for k in 0..12u64 {
                let (a, b, c) = (program(k * 3 + 1), program(k * 3 + 2), program(k * 3 + 3));
                let op1 = s1[(k as usize) % s1.len()];
                let op2 = s2[(k as usize + 1) % s2.len()];
                let plain = format!("{a} {op1} {b} {op2} {c}");
                let katch = if left_first {
                    format!("({a} {op1} {b}) {op2} {c}")
                } else {
                    format!("{a} {op1} ({b} {op2} {c})")
                };
                let other = if left_first {
                    format!("{a} {op1} ({b} {op2} {c})")
                } else {
                    format!("({a} {op1} {b}) {op2} {c}")
                };
                assert!(equivalent(&plain, &katch), "{i},{j}: {plain} ≢ {katch}");
                if !equivalent(&plain, &other) {
                    differs += 1;
                }
            }
            // The tree itself, on names.
            let tree = parse_expr(&format!("x {} y {} z", s1[0], s2[0]), 10).unwrap().to_string();
            let inner_left = tree.starts_with("((x");
            let inner_right = tree.ends_with("z))");
            if l1 == l2 && *l1 < 3 {
                // Union and sequence are lists.
                assert!(!inner_left && !inner_right, "{tree}");
            } else {
                assert_eq!(inner_left, left_first, "{tree}");
                assert_eq!(inner_right, !left_first, "{tree}");
            }
        }
    }
    // The groupings matter: a parser grouping the other way fails this test.
    assert!(differs > 50, "only {differs} cases tell the groupings apart");
}

/// A random expression, kept as a tree so it can be printed two ways.
#[derive(Clone, Debug)]
enum T {
    Atom(&'static str),
    Not(Box<T>),
    Star(Box<T>),
    Bin(usize, Box<T>, Box<T>),
}

const ATOMS: &[&str] = &["@a=0", "@a=1", "@b=1", "@a≠2", "ε", "∅"];
const ACTIONS: &[&str] = &["@a←1", "@b←0", "δ"];

/// Predicates only (tests and their combinations), which `¬` accepts.
fn predicate() -> impl Strategy<Value = T> {
    let leaf = prop::sample::select(ATOMS).prop_map(T::Atom);
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| T::Not(Box::new(t))),
            (0..OPS.len(), inner.clone(), inner).prop_map(|(o, a, b)| T::Bin(
                o,
                Box::new(a),
                Box::new(b)
            )),
        ]
    })
}

fn program_tree() -> impl Strategy<Value = T> {
    let leaf = prop_oneof![
        3 => prop::sample::select(ATOMS).prop_map(T::Atom),
        2 => prop::sample::select(ACTIONS).prop_map(T::Atom),
        1 => predicate().prop_map(|t| T::Not(Box::new(t))),
    ];
    leaf.prop_recursive(4, 20, 2, |inner| {
        prop_oneof![
            1 => inner.clone().prop_map(|t| T::Star(Box::new(t))),
            4 => (0..OPS.len(), inner.clone(), inner)
                .prop_map(|(o, a, b)| T::Bin(o, Box::new(a), Box::new(b))),
        ]
    })
}

/// Every compound expression in parentheses.
fn full(t: &T) -> String {
    match t {
        T::Atom(a) => (*a).to_string(),
        T::Not(x) => format!("¬({})", full(x)),
        T::Star(x) => format!("({})⋆", full(x)),
        T::Bin(o, a, b) => format!("({} {} {})", full(a), OPS[*o].0[0], full(b)),
    }
}

/// The precedence level of a tree's top (KATch's exprU 1, exprC 2, exprZ 3, exprS 4, exprN 5,
/// atoms 6).
fn level(t: &T) -> u8 {
    match t {
        T::Atom(_) => 6,
        T::Not(_) => 5,
        T::Star(_) => 4,
        T::Bin(o, _, _) => OPS[*o].1,
    }
}

/// Only the parentheses KATch's grammar needs: an operand of a binary operator is bare when it
/// binds at least as tightly (on the right of `⊕ ∩ ∖`, which fold to the left, strictly more
/// tightly; union and sequence are associative); a star takes a negation or an atom (or a
/// star); a negation takes an atom (or a negation).
fn minimal(t: &T) -> String {
    let wrap = |x: &T, min: u8| {
        if level(x) >= min { minimal(x) } else { format!("({})", minimal(x)) }
    };
    match t {
        T::Atom(a) => (*a).to_string(),
        T::Not(x) => format!("¬{}", wrap(x, 5)),
        T::Star(x) => format!("{}⋆", wrap(x, 4)),
        T::Bin(o, a, b) => {
            let l = OPS[*o].1;
            let right = if l == 3 { l + 1 } else { l };
            format!("{} {} {}", wrap(a, l), OPS[*o].0[0], wrap(b, right))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn minimal_and_full_parentheses_build_the_same_program(t in program_tree()) {
        let (f, m) = (full(&t), minimal(&t));
        prop_assert!(equivalent(&f, &m), "{f}\n{m}");
    }
}

#[test]
fn associativity_a_minus_b_minus_c_is_a_minus_b_then_minus_c() {
    let text = "\
a = @sw=1 ∪ @sw=2 ∪ @sw=3
b = @sw=1
c = @sw=2
check a - b - c ≡ @sw=3
check a ∖ b ∖ c ≡ (a ∖ b) ∖ c
check a ∖ b ∖ c ≢ a ∖ (b ∖ c)
check a ∩ b ⊕ c ≡ (a ∩ b) ⊕ c
check a ⊕ b ∩ c ≡ (a ⊕ b) ∩ c
check a ⊕ b ∩ c ≢ a ⊕ (b ∩ c)
";
    let checks = run(text).unwrap();
    assert_eq!(checks.len(), 6);
    for c in &checks {
        assert!(c.holds(), "line {}: {}", c.line, c.text);
    }
}

#[test]
fn continuation_lines_continue_the_statement_above() {
    // KATch's own example of a multi-line statement, with a comment line and a blank line
    // inside, tabs, and trailing spaces.
    let text = "\
x =
  @a=5

y = @a=5 
  ⋅ 
-- a comment between continuation lines
\t@a←5 

check x ≡ y
check
  @a=1 ∪
     @a=2
  ≡ @a=2 ∪ @a=1
";
    let checks = run(text).unwrap();
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(Check::holds));
    assert_eq!((checks[0].line, checks[1].line), (9, 10));
    assert_eq!(checks[1].text, "check @a=1 ∪ @a=2 ≡ @a=2 ∪ @a=1");
    // An error on a continuation line names that line and its column.
    let e = run("check @a=1\n  ≡ (@a=2\n").unwrap_err();
    assert_eq!((e.line, e.col), (2, 10), "{e}");
    // An indented first line has nothing to continue.
    let e = run("  check ε ≡ ε\n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.message.contains("no statement comes before it"), "{e}");
}

#[test]
fn a_star_after_a_test_with_question_marks() {
    let checks = run("\
check @a=3?⋆ ≡ ε
check @a=3??⋆ ≡ (@a=3)⋆
check @a←3⋅@b=2?? ≡ @b=2??⋅@a←3
check @a=3 ? ⋆ ⋅ @a=3 ≡ @a=3
")
    .unwrap();
    assert_eq!(checks.len(), 4);
    assert!(checks.iter().all(Check::holds));
    // After anything but a test the marks come after the stars, so a star cannot follow.
    let e = run("x = @a=1\ncheck x?⋆ ≡ ε\n").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn names_and_keywords_as_katch_reads_them() {
    let checks = run("\
forwardx = 1
x = @a←4
check forwardx ≡ @a=4
check forward x ≡ @a=4
for i ∈ 1..3 do y = @a=i
check y ≡ @a=3
check @a=i ≡ @a=3
")
    .unwrap();
    assert_eq!(checks.len(), 4);
    assert!(checks.iter().all(Check::holds));
    // A name glued to a keyword is the keyword, which leaves the rest unread.
    let e = run("dropped = @a=1\ncheck dropped ≡ ∅\n").unwrap_err();
    assert!(e.message.contains("names cannot start with drop"), "{e}");
    // Field names have no underscore; numbers no space after the sign.
    assert!(run("check @ip_dst=1 ≡ ∅\n").is_err());
    assert!(run("check @a=- 1 ≡ ∅\n").is_err());
    // Negation applies to each `¬` in turn: `¬¬` of an assignment is still an error.
    assert!(run("check ¬¬@a←1 ≡ @a←1\n").is_err());
}
