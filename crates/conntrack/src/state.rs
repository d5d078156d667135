//! What a rule set sees of a packet's connection: [`CtState`] and sets of them ([`CtStates`]),
//! and the TCP states as conntrack names them ([`TcpState`]).

use std::fmt;

/// The `ct state` of one packet, as nftables and iptables' `conntrack --ctstate` match it.
///
/// Linux derives it from the packet's `ctinfo`: a packet of the direction that opened the
/// entry is `New` until a packet of the other direction has been seen, then `Established`; a
/// packet of the other direction is `Established`; an ICMP error quoting a tracked flow is
/// `Related`; a packet conntrack attached no entry to is `Invalid`; neighbour discovery,
/// MLD and router messages are `Untracked`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CtState {
    /// No entry attached: the packet failed a check (see [`crate::Reason`]).
    Invalid = 1,
    /// A packet of an entry that has seen both directions, or of the reply direction.
    Established = 2,
    /// An ICMP or ICMPv6 error about a tracked flow.
    Related = 4,
    /// A packet of the direction that opened the entry, before any reply.
    New = 8,
    /// Not tracked on purpose (ICMPv6 neighbour discovery, MLD, router messages).
    Untracked = 64,
}

impl CtState {
    /// Every state, in nftables' order.
    pub const ALL: [CtState; 5] =
        [Self::Invalid, Self::Established, Self::Related, Self::New, Self::Untracked];

    /// The name nftables and `conntrack` print: `invalid`, `established`, `related`, `new`,
    /// `untracked`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Invalid => "invalid",
            Self::Established => "established",
            Self::Related => "related",
            Self::New => "new",
            Self::Untracked => "untracked",
        }
    }

    /// The state named `name` (as [`CtState::name`] prints it, any case).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name().eq_ignore_ascii_case(name))
    }

    /// Its bit in a [`CtStates`] set (the value nftables uses: `ct state` is a bit mask).
    #[inline]
    pub fn bit(self) -> u8 {
        self as u8
    }
}

impl fmt::Display for CtState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`CtState`]s, as a rule matches them (`ct state established,related`). The bits
/// are nftables' own, so `ct state & 0x06` means the same here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CtStates(pub u8);

impl CtStates {
    /// The empty set.
    pub const NONE: CtStates = CtStates(0);

    /// A set of the given states.
    pub fn of(states: &[CtState]) -> Self {
        Self(states.iter().fold(0, |m, s| m | s.bit()))
    }

    /// Whether `s` is in the set.
    #[inline]
    pub fn contains(self, s: CtState) -> bool {
        self.0 & s.bit() != 0
    }

    /// The set with `s` added.
    pub fn with(self, s: CtState) -> Self {
        Self(self.0 | s.bit())
    }

    /// Parses a comma-separated list of state names (`new,established`), as nftables and
    /// `iptables -m conntrack --ctstate` write them; the error names the word it did not know.
    pub fn parse(list: &str) -> Result<Self, String> {
        list.split(',').map(str::trim).try_fold(Self::NONE, |set, word| {
            CtState::from_name(word)
                .map(|s| set.with(s))
                .ok_or_else(|| format!("unknown ct state `{word}`"))
        })
    }
}

impl fmt::Display for CtStates {
    /// The names in nftables' order, comma-separated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for s in CtState::ALL.into_iter().filter(|&s| self.contains(s)) {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            f.write_str(s.name())?;
        }
        Ok(())
    }
}

/// The TCP states of Linux's tracker (`enum tcp_conntrack`), in its order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum TcpState {
    /// No packet yet.
    #[default]
    None = 0,
    /// A SYN was seen.
    SynSent = 1,
    /// A SYN/ACK answered it.
    SynRecv = 2,
    /// The handshake completed (or a connection was picked up mid-stream).
    Established = 3,
    /// A FIN was seen.
    FinWait = 4,
    /// The FIN was acknowledged.
    CloseWait = 5,
    /// FINs both ways, waiting for the last ACK.
    LastAck = 6,
    /// The last ACK was seen.
    TimeWait = 7,
    /// Reset.
    Close = 8,
    /// A SYN from the other side while in SYN_SENT: simultaneous open.
    SynSent2 = 9,
}

impl TcpState {
    /// All states, in Linux's order (the transition table's columns).
    pub const ALL: [TcpState; 10] = [
        Self::None,
        Self::SynSent,
        Self::SynRecv,
        Self::Established,
        Self::FinWait,
        Self::CloseWait,
        Self::LastAck,
        Self::TimeWait,
        Self::Close,
        Self::SynSent2,
    ];

    /// The name `conntrack -L` prints (`SYN_SENT`, `ESTABLISHED`, `TIME_WAIT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::SynSent => "SYN_SENT",
            Self::SynRecv => "SYN_RECV",
            Self::Established => "ESTABLISHED",
            Self::FinWait => "FIN_WAIT",
            Self::CloseWait => "CLOSE_WAIT",
            Self::LastAck => "LAST_ACK",
            Self::TimeWait => "TIME_WAIT",
            Self::Close => "CLOSE",
            Self::SynSent2 => "SYN_SENT2",
        }
    }

    /// The state `conntrack` names `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    #[inline]
    pub(crate) fn from_u8(v: u8) -> Self {
        Self::ALL.get(usize::from(v)).copied().unwrap_or(Self::None)
    }
}

impl fmt::Display for TcpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_parse_and_print() {
        let s = CtStates::parse("established, related").unwrap();
        assert!(s.contains(CtState::Established) && s.contains(CtState::Related));
        assert!(!s.contains(CtState::New));
        assert_eq!(s.0, 0x06, "nftables' bits");
        assert_eq!(s.to_string(), "established,related");
        assert_eq!(CtStates::parse("NEW").unwrap(), CtStates::of(&[CtState::New]));
        assert_eq!(CtStates::parse("new,bogus").unwrap_err(), "unknown ct state `bogus`");
    }

    #[test]
    fn tcp_names_round_trip() {
        for s in TcpState::ALL {
            assert_eq!(TcpState::from_name(s.name()), Some(s));
            assert_eq!(TcpState::from_u8(s as u8), s);
        }
    }
}
