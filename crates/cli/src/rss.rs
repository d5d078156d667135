//! `rampart rss`: Toeplitz hashes, queues, port-for-queue and a capture's queue balance.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use rampart_rss::{Key, PortPicker, Reta, Toeplitz, Tuple};

use crate::input;

/// The `rampart rss` subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum Cmd {
    /// Print the Toeplitz hash of a tuple as 0x%08x (addresses only without ports).
    Hash {
        #[command(flatten)]
        key: KeyArg,
        #[command(flatten)]
        tuple: TupleArgs,
    },
    /// Print the queue a tuple lands on.
    Queue {
        #[command(flatten)]
        key: KeyArg,
        #[command(flatten)]
        reta: RetaArgs,
        #[command(flatten)]
        tuple: TupleArgs,
    },
    /// List the local ports whose return traffic from REMOTE lands on QUEUE, one per line.
    Ports {
        #[command(flatten)]
        key: KeyArg,
        #[command(flatten)]
        reta: RetaArgs,
        /// The queue the return traffic must reach.
        #[arg(long, value_name = "Q")]
        queue: usize,
        /// The local address (the return packets' destination).
        #[arg(long, value_name = "ADDR")]
        local: IpAddr,
        /// The remote address and port (the return packets' source); IPv6 as `[ADDR]:PORT`.
        #[arg(long, value_name = "ADDR:PORT")]
        remote: SocketAddr,
        /// Local ports to consider (Linux's ephemeral range is 32768-60999).
        #[arg(long, value_name = "LO-HI", default_value = "1-65535", value_parser = parse_range)]
        range: RangeInclusive<u16>,
    },
    /// How a capture's packets and flows would spread over the queues.
    Balance {
        /// Capture file (pcap or pcapng).
        #[arg(short = 'r', long = "read", value_name = "FILE")]
        file: PathBuf,
        #[command(flatten)]
        key: KeyArg,
        #[command(flatten)]
        reta: RetaArgs,
    },
}

/// The key.
#[derive(clap::Args, Debug)]
pub(crate) struct KeyArg {
    /// `ms` (Microsoft's default), `symmetric` (0x6d5a, 40 bytes), `symmetric52`, or 40 or 52
    /// hex bytes (colons allowed, as `ethtool -x` prints them).
    #[arg(long, value_name = "KEY", default_value = "ms", value_parser = parse_key)]
    key: Key,
}

/// The indirection table: Linux's round-robin fill.
#[derive(clap::Args, Debug)]
pub(crate) struct RetaArgs {
    /// RETA entries (a power of two: 128 on ixgbe, 512 on i40e).
    #[arg(long, value_name = "N", default_value_t = 128)]
    reta_size: usize,
    /// Receive queues; entry i points at queue i mod Q.
    #[arg(long, value_name = "Q")]
    queues: usize,
}

impl RetaArgs {
    fn reta(&self) -> Result<Reta, String> {
        Reta::round_robin(self.reta_size, self.queues).map_err(|e| e.to_string())
    }
}

/// A tuple as the packet carries it.
#[derive(clap::Args, Debug)]
pub(crate) struct TupleArgs {
    /// Source address (first in the hash input).
    src: IpAddr,
    /// Destination address.
    dst: IpAddr,
    /// Source port (with DPORT: hash addresses and ports).
    #[arg(requires = "dport")]
    sport: Option<u16>,
    /// Destination port.
    dport: Option<u16>,
}

impl TupleArgs {
    fn tuple(&self) -> Result<Tuple, String> {
        let ports = self.sport.zip(self.dport);
        Tuple::new(self.src, self.dst, ports)
            .ok_or_else(|| format!("{} and {} are of different families", self.src, self.dst))
    }
}

fn parse_key(s: &str) -> Result<Key, String> {
    Key::parse(s).map_err(|e| e.to_string())
}

fn parse_range(s: &str) -> Result<RangeInclusive<u16>, String> {
    let bad = || format!("'{s}' is not a port range LO-HI (0 <= LO <= HI <= 65535)");
    let (lo, hi) = s.split_once('-').ok_or_else(bad)?;
    let (lo, hi): (u16, u16) =
        (lo.trim().parse().map_err(|_| bad())?, hi.trim().parse().map_err(|_| bad())?);
    if lo > hi {
        return Err(bad());
    }
    Ok(lo..=hi)
}

fn usage(msg: String) -> crate::Fail {
    crate::Fail(msg, 2)
}

pub(crate) fn run(cmd: Cmd) -> Result<ExitCode, crate::Fail> {
    match cmd {
        Cmd::Hash { key, tuple } => {
            let h = Toeplitz::new(key.key).hash_tuple(&tuple.tuple().map_err(usage)?);
            input::write_stdout(|o| writeln!(o, "0x{h:08x}"))?;
        }
        Cmd::Queue { key, reta, tuple } => {
            let reta = reta.reta().map_err(usage)?;
            let h = Toeplitz::new(key.key).hash_tuple(&tuple.tuple().map_err(usage)?);
            input::write_stdout(|o| writeln!(o, "{}", reta.queue(h)))?;
        }
        Cmd::Ports { key, reta, queue, local, remote, range } => {
            let reta = reta.reta().map_err(usage)?;
            if queue >= reta.queues() {
                return Err(usage(format!(
                    "--queue {queue} is not below --queues {}",
                    reta.queues()
                )));
            }
            if local.is_ipv4() != remote.is_ipv4() {
                return Err(usage(format!("{local} and {remote} are of different families")));
            }
            let picker = PortPicker::new(Toeplitz::new(key.key), reta, range.clone());
            let starved = picker.starved_queues(remote.is_ipv6());
            if !starved.is_empty() {
                let rank = picker.port_index(remote.is_ipv6()).rank();
                eprintln!(
                    "rampart: this key's port bits reach only 2^{rank} of {} RETA entries; \
                     some remotes leave queues {starved:?} without any port",
                    picker.reta().size()
                );
            }
            if picker.owned_slots(queue).is_empty() {
                return Err(crate::Fail(
                    format!(
                        "queue {queue} owns none of the {} RETA entries (more queues than entries)",
                        picker.reta().size()
                    ),
                    1,
                ));
            }
            let ports = picker.ports(queue, remote, local);
            input::write_stdout(|o| ports.iter().try_for_each(|p| writeln!(o, "{p}")))?;
            if ports.is_empty() {
                return Err(crate::Fail(
                    format!(
                        "no local port in {}-{} sends {remote}'s return traffic to queue {queue}",
                        range.start(),
                        range.end()
                    ),
                    1,
                ));
            }
        }
        Cmd::Balance { file, key, reta } => {
            let reta = reta.reta().map_err(usage)?;
            let mut capture = input::open_file(&file)?;
            input::refuse_overwrite(&capture, None)?;
            let stop = input::stop_flag();
            let t = Toeplitz::new(key.key);
            let (b, error) = rampart_engine::balance(&mut capture, &t, &reta, &stop);
            input::write_stdout(|o| print_balance(o, &b))?;
            input::report_end(&mut capture, input::Tell::Alone);
            if let Some(e) = error {
                return Err(crate::Fail(
                    format!("{e}\nrampart: the counts above cover the packets before that point"),
                    crate::run_error_status(&e),
                ));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_balance(o: &mut dyn Write, b: &rampart_engine::Balance) -> io::Result<()> {
    let pct = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
    let hashed: u64 = b.queues.iter().map(|q| q.packets).sum();
    let flows: u64 = b.queues.iter().map(|q| q.flows).sum();
    writeln!(o, "queue {:>12} {:>8} {:>10} {:>8}", "packets", "share", "flows", "share")?;
    for (i, q) in b.queues.iter().enumerate() {
        writeln!(
            o,
            "{i:>5} {:>12} {:>7.2}% {:>10} {:>7.2}%",
            q.packets,
            pct(q.packets, hashed),
            q.flows,
            pct(q.flows, flows)
        )?;
    }
    let max = b.queues.iter().map(|q| q.packets).max().unwrap_or(0);
    let mean = hashed as f64 / b.queues.len().max(1) as f64;
    writeln!(
        o,
        "{} packets hashed, {} not IP (default queue); busiest queue at {:.2}x the mean",
        hashed,
        b.unhashed,
        if mean > 0.0 { max as f64 / mean } else { 0.0 }
    )?;
    writeln!(o, "{} flows, {} with packets on more than one queue", b.flows, b.split)
}
