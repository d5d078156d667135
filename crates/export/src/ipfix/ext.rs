//! The element groups a command adds to the base template when its records carry them:
//! Zeek's view of a TCP connection ([`tcp_fields`]) and the stateful firewall's verdict, rule
//! and connection state ([`firewall_fields`]). Each combination has a template id of its own
//! ([`template_id`]), so a collector never meets two field lists under one id.

use rampart_engine::{FlowRecord, Verdict};
use rampart_tcpstate::DirCounters;

use super::rampart_ie::*;
use super::{Config, Field, TEMPLATE_V4, VARIABLE, fields, ie, put_var};

/// IANA's forwardingStatus (RFC 7270 §4.12), one octet: the status in the two high bits
/// (1 forwarded, 2 dropped), a reason code in the six low ones.
pub const FORWARDING_STATUS: u16 = 89;

/// The longest rule name sent; longer ones are cut (at a character boundary), so that a data
/// record with every element group still fits a message of [`super::MIN_MTU`] octets.
pub const MAX_RULE_NAME: usize = 60;

/// The template id of IPv4 (`v6` false) or IPv6 records with the element groups `cfg` turns
/// on: 256/257 the base elements only, 258/259 with the TCP group, 260/261 with the firewall
/// group, 262/263 with both.
pub fn template_id(v6: bool, cfg: &Config) -> u16 {
    TEMPLATE_V4 + 2 * (u16::from(cfg.tcp) + 2 * u16::from(cfg.firewall)) + u16::from(v6)
}

/// The fields of the template [`template_id`] names, in order: the fixed-length fields of
/// [`fields`], of the TCP group if `cfg.tcp` and of the firewall group if `cfg.firewall`,
/// then their variable-length fields in the same order. Strings go last because collectors
/// that place fields by fixed offsets (nfdump 1.7) read nothing after a variable-length
/// field; without groups this is [`fields`] as it is.
pub fn template_fields(v6: bool, cfg: &Config) -> Vec<Field> {
    let mut all = fields(v6, cfg.pen);
    if cfg.tcp {
        all.extend(tcp_fields(cfg.pen));
    }
    if cfg.firewall {
        all.extend(firewall_fields(cfg.pen));
    }
    let (fixed, var): (Vec<Field>, Vec<Field>) = all.into_iter().partition(|f| f.len != VARIABLE);
    fixed.into_iter().chain(var).collect()
}

/// The TCP group: Zeek's `conn_state` and `history` (strings), then the initiator's
/// retransmissions, out-of-order segments, gaps and zero windows (unsigned32 each), then the
/// responder's, as the reverse elements of RFC 5103 §6.2 (the same enterprise number, the id
/// with [`REVERSE_BIT`]).
pub fn tcp_fields(pen: u32) -> Vec<Field> {
    let own = |id, len| Field { id, len, pen: Some(pen) };
    let counters = [TCP_RETRANSMISSIONS, TCP_OUT_OF_ORDER, TCP_GAPS, TCP_ZERO_WINDOWS];
    let mut f = vec![own(CONN_STATE, VARIABLE), own(CONN_HISTORY, VARIABLE)];
    f.extend(counters.iter().map(|&id| own(id, 4)));
    f.extend(counters.iter().map(|&id| own(id | REVERSE_BIT, 4)));
    f
}

/// The firewall group: IANA's forwardingStatus (1 octet), then rampart's verdict, `ct state`,
/// conntrack TCP state, ASSURED and the rule's name.
pub fn firewall_fields(pen: u32) -> Vec<Field> {
    let own = |id, len| Field { id, len, pen: Some(pen) };
    vec![
        ie(FORWARDING_STATUS, 1),
        own(FIREWALL_VERDICT, 1),
        own(CT_STATE, 1),
        own(CT_TCP_STATE, 1),
        own(CT_ASSURED, 1),
        own(FIREWALL_RULE, VARIABLE),
    ]
}

/// The forwardingStatus of a record: accepted 64 (forwarded, reason unknown); dropped or
/// rejected by a rule 129 (dropped: ACL deny); dropped by no rule (a full connection table)
/// 128 (dropped, reason unknown); 0 (unknown) without a verdict.
pub fn forwarding_status(r: &FlowRecord) -> u8 {
    match &r.verdict {
        None => 0,
        Some((Verdict::Accept, _)) => 0x40,
        Some((Verdict::Drop | Verdict::Reject, Some(_))) => 0x81,
        Some((Verdict::Drop | Verdict::Reject, None)) => 0x80,
    }
}

/// rampart's [`FIREWALL_VERDICT`] value of a record.
pub fn verdict_code(r: &FlowRecord) -> u8 {
    match &r.verdict {
        None => 0,
        Some((Verdict::Accept, _)) => 1,
        Some((Verdict::Drop, _)) => 2,
        Some((Verdict::Reject, _)) => 3,
    }
}

/// The rule's name as sent: at most [`MAX_RULE_NAME`] octets, cut at a character boundary.
pub(super) fn rule_name(r: &FlowRecord) -> &str {
    let s = r.verdict.as_ref().and_then(|(_, rule)| rule.as_deref()).unwrap_or("");
    &s[..s.floor_char_boundary(MAX_RULE_NAME)]
}

/// Octets the groups' variable-length fields take in `r`'s data record (length prefixes
/// included; none of them reaches 255 octets).
pub(super) fn var_len(r: &FlowRecord, cfg: &Config) -> usize {
    let mut n = 0;
    if cfg.tcp {
        let (state, history) =
            r.conn.as_ref().map_or(("", ""), |c| (c.state.name(), c.history.as_str()));
        n += 1 + state.len() + 1 + history.len();
    }
    if cfg.firewall {
        n += 1 + rule_name(r).len();
    }
    n
}

fn put_counters(b: &mut Vec<u8>, d: &DirCounters) {
    for v in [d.retrans, d.out_of_order, d.lost, d.zero_window] {
        b.extend_from_slice(&v.to_be_bytes());
    }
}

/// Appends the groups' fixed-length values of `r`, in the order of [`template_fields`] (after
/// the base's fixed-length ones).
pub(super) fn encode_fixed(b: &mut Vec<u8>, r: &FlowRecord, cfg: &Config) {
    if cfg.tcp {
        let dirs = r.conn.as_ref().map_or([DirCounters::default(); 2], |c| c.dirs);
        put_counters(b, &dirs[0]);
        put_counters(b, &dirs[1]);
    }
    if cfg.firewall {
        b.push(forwarding_status(r));
        b.push(verdict_code(r));
        let ct = r.ct.as_ref();
        b.push(ct.map_or(0, |c| c.ct_state as u8));
        b.push(ct.and_then(|c| c.tcp_state).map_or(0, |t| t as u8));
        b.push(if ct.is_some_and(|c| c.assured) { 1 } else { 2 });
    }
}

/// Appends the groups' strings of `r` (after the base's), in the order of
/// [`template_fields`].
pub(super) fn encode_var(b: &mut Vec<u8>, r: &FlowRecord, cfg: &Config) {
    if cfg.tcp {
        let (state, history) =
            r.conn.as_ref().map_or(("", ""), |c| (c.state.name(), c.history.as_str()));
        put_var(b, state.as_bytes());
        put_var(b, history.as_bytes());
    }
    if cfg.firewall {
        put_var(b, rule_name(r).as_bytes());
    }
}
