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
//! - [`load`]: rule files loaded into one manager for the questions, and each answer's
//!   packet replayed through the classifier that runs the rules.
//! - [`validate`]: the compiled classifier lifted back into a diagram and proved equal to
//!   its rules; [`live`]: the updatable classifier proved after every update and compile.
//! - [`spp`], [`netkat`], [`nkpl`]: NetKAT packet programs as transformer diagrams, `dup`
//!   and star by derivatives with a bisimulation that returns counterexample traces, and
//!   KATch's NKPL language.
//!
//! Node storage is a plain `Vec` per manager that starts empty and doubles: handles are
//! indices, so nothing needs the stable addresses that google/netkat pages its nodes for,
//! and a short-lived manager (one query) allocates only what it uses.
//!
//! This crate reads the classifier's rule model and never the reverse.

pub mod dd;
pub mod live;
pub mod load;
pub mod netkat;
pub mod nkpl;
pub mod questions;
pub mod rules;
pub mod spp;
pub mod validate;
