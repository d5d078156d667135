//! The oracle: a first-match scan, kept obviously correct.

use crate::rule::{Header, Rule};

/// Index of the first rule that matches, if any.
pub fn first_match<const N: usize>(rules: &[Rule<N>], h: &Header<N>) -> Option<usize> {
    rules.iter().position(|r| r.matches(h))
}
