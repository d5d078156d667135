//! Policy verification for rampart.
//!
//! - [`dd`]: interval decision diagrams over whole header fields (a node splits one field
//!   into intervals; prefixes and port ranges are one interval each), hash-consed and
//!   canonical, with the set and first-match operations, witnesses and counts.
//! - [`rules`]: a rule list in any of the classifier's input formats turned into a diagram
//!   from packets to the rule that decides them.
//! - [`questions`]: what a firewall engineer asks of rule sets: which rule decides this
//!   packet, which rules can never match and what covers them, do two rule sets differ and
//!   on which packet, is there a packet meeting a constraint that gets an action.
//!
//! This crate reads the classifier's rule model and never the reverse.

pub mod dd;
pub mod live;
pub mod netkat;
pub mod nkpl;
pub mod questions;
pub mod rules;
pub mod spp;
pub mod validate;
