//! One file per protocol: each defines a `DETECTOR` for the registry (`registry.rs`), written
//! from the protocol's specification (fields, lengths, magic values, checksums), with the
//! evidence it needs and its sources.

pub(crate) mod ajp;
pub(crate) mod alicloud;
pub(crate) mod among_us;
pub(crate) mod amqp;
pub(crate) mod atg;
pub(crate) mod avast;
pub(crate) mod avast_securedns;
pub(crate) mod bacnet;
pub(crate) mod beckhoff_ads;
pub(crate) mod bfcp;
pub(crate) mod bfd;
pub(crate) mod bgp;
pub(crate) mod bitcoin;
pub(crate) mod bjnp;
pub(crate) mod c1222;
pub(crate) mod c37118;
pub(crate) mod caneth;
pub(crate) mod capwap;
pub(crate) mod cassandra;
pub(crate) mod ceph;
pub(crate) mod checkmk;
pub(crate) mod cip_io;
pub(crate) mod citrix;
pub(crate) mod cnp_ip;
pub(crate) mod coap;
pub(crate) mod collectd;
pub(crate) mod cpha;
pub(crate) mod crynet;
pub(crate) mod dcerpc;
pub(crate) mod diameter;
pub(crate) mod dlep;
pub(crate) mod dlms;
pub(crate) mod dnp3;
pub(crate) mod dnscrypt;
pub(crate) mod drda;
pub(crate) mod dsi;
pub(crate) mod eaq;
pub(crate) mod edonkey;
pub(crate) mod egd;
pub(crate) mod elasticsearch;
pub(crate) mod ether_s_bus;
pub(crate) mod ethereum;
pub(crate) mod ethernetip;
pub(crate) mod ethersio;
pub(crate) mod fastcgi;
pub(crate) mod fins;
pub(crate) mod fix;
pub(crate) mod flute;
pub(crate) mod gearman;
pub(crate) mod genshin;
pub(crate) mod giop;
pub(crate) mod git;
pub(crate) mod gnutella;
pub(crate) mod gtp;
pub(crate) mod h323;
pub(crate) mod haproxy;
pub(crate) mod hart_ip;
pub(crate) mod hislip;
pub(crate) mod hl7;
pub(crate) mod hpvirtgrp;
pub(crate) mod hsrp;
pub(crate) mod iax;
pub(crate) mod iec104;
pub(crate) mod iscsi;
pub(crate) mod jrmi;
pub(crate) mod jsonrpc;
pub(crate) mod kafka;
pub(crate) mod kcp;
pub(crate) mod kismet;
pub(crate) mod knxnet;
pub(crate) mod ldp;
pub(crate) mod lisp;
pub(crate) mod lustre;
pub(crate) mod megaco;
pub(crate) mod memcached;
pub(crate) mod merakicloud;
pub(crate) mod mgcp;
pub(crate) mod mining;
pub(crate) mod miop;
pub(crate) mod mms;
pub(crate) mod modbus;
pub(crate) mod monero;
pub(crate) mod mongodb;
pub(crate) mod munin;
pub(crate) mod nano;
pub(crate) mod natpmp;
pub(crate) mod nats;
pub(crate) mod netcode;
pub(crate) mod netflow;
pub(crate) mod nintendo;
pub(crate) mod nomachine;
pub(crate) mod oicq;
pub(crate) mod opcua;
pub(crate) mod openflow;
pub(crate) mod openwire;
pub(crate) mod path_of_exile;
pub(crate) mod pfcp;
pub(crate) mod photon;
pub(crate) mod pptp;
pub(crate) mod ptpv2;
pub(crate) mod radius;
pub(crate) mod raft;
pub(crate) mod raknet;
pub(crate) mod rdp_udp;
pub(crate) mod redis;
pub(crate) mod riotgames;
pub(crate) mod ripe_atlas;
pub(crate) mod rmcp;
pub(crate) mod roughtime;
pub(crate) mod rsh;
pub(crate) mod rsync;
pub(crate) mod rtps;
pub(crate) mod rx;
pub(crate) mod s7comm;
pub(crate) mod sd_rtn;
pub(crate) mod skinny;
pub(crate) mod slp;
pub(crate) mod smpp;
pub(crate) mod socks;
pub(crate) mod someip;
pub(crate) mod source_engine;
pub(crate) mod spotify_ap;
pub(crate) mod stomp;
pub(crate) mod syncthing;
pub(crate) mod syslog_tcp;
pub(crate) mod tds;
pub(crate) mod teredo;
pub(crate) mod thrift;
pub(crate) mod tinc;
pub(crate) mod tivoconnect;
pub(crate) mod tns;
pub(crate) mod tplink_shp;
pub(crate) mod trdp;
pub(crate) mod tuya;
pub(crate) mod ubntac2;
pub(crate) mod uftp;
pub(crate) mod vnc;
pub(crate) mod weave;
pub(crate) mod websocket;
pub(crate) mod whois;
pub(crate) mod wow;
pub(crate) mod wsd;
pub(crate) mod xdmcp;
pub(crate) mod xiaomi;
pub(crate) mod xmpp;
pub(crate) mod z3950;
pub(crate) mod zabbix;
pub(crate) mod zug;

use crate::{Label, Proto, Seen};

/// `Is` a protocol named by its detector.
pub(crate) fn is(name: &'static &'static str) -> Seen {
    Seen::Is(Label { master: Proto::Other(name), app: None })
}

/// `Maybe` a protocol named by its detector, with the value that must stay the same.
pub(crate) fn maybe(name: &'static &'static str, key: u32) -> Seen {
    Seen::Maybe(Label { master: Proto::Other(name), app: None }, key, None)
}

/// A little-endian u32 at `off`.
pub(crate) fn le32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off + 4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

#[cfg(test)]
pub(crate) mod testing {
    use crate::{Meta, Packet, Seen};

    /// Runs a detector on one packet from the initiator.
    pub(crate) fn run(
        detect: fn(&Packet<'_>, &mut Meta) -> Seen,
        b: &[u8],
        ports: [u16; 2],
    ) -> Seen {
        detect(&Packet { payload: b, from_initiator: true, ports, index: 0 }, &mut Meta::default())
    }

    /// Every prefix of `b` and `b` with each byte flipped: no panic.
    pub(crate) fn robust(detect: fn(&Packet<'_>, &mut Meta) -> Seen, b: &[u8], ports: [u16; 2]) {
        for cut in 0..=b.len() {
            let _ = run(detect, &b[..cut], ports);
        }
        let mut v = b.to_vec();
        for i in 0..v.len() {
            v[i] ^= 0xff;
            let _ = run(detect, &v, ports);
            v[i] ^= 0xff;
        }
    }
}
