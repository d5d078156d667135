//! `--metrics ADDR:PORT`: Prometheus metrics over HTTP while a command runs.
//!
//! The endpoint is a small HTTP/1.1 server on its own thread, written with `std::net` (one
//! connection at a time, `GET /metrics` answered and the connection closed, 404 for any
//! other path): a scraper every few seconds needs no more, and it adds no dependency. The
//! page is rendered at scrape time by `rampart_export::prometheus` from what the run's threads
//! last published: the engine's per-thread summaries on a [`Board`] (refreshed at batch
//! boundaries, at most every [`PUBLISH_EVERY`]) and the record and sample counts kept by
//! [`Metered`], the sink wrapper on the reading thread. Nothing is shared on the packet path.
//!
//! `--metrics-linger SECONDS` keeps the endpoint up after the run, serving the final values
//! (`rampart_run_ended` is 1 then): a run over a capture file, or a short live capture, ends
//! before a scraper's next visit otherwise. Ctrl-C ends the linger early.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rampart_capture::{Capture, LiveMonitor};
use rampart_engine::{Board, Event, Sink};
use rampart_export::prometheus::{self, FirewallCounts, FlowCounts, LiveCounts, Page, PrefixRtt};

use crate::Fail;

/// How often a counting thread publishes its counters at most.
pub(crate) const PUBLISH_EVERY: Duration = Duration::from_millis(100);

/// The `--metrics` options of long-running commands.
#[derive(clap::Args, Debug)]
pub(crate) struct MetricsArgs {
    /// Serve Prometheus metrics (text format 0.0.4) at http://ADDR:PORT/metrics while the
    /// command runs (port 0: any free port, printed on standard error).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) metrics: Option<String>,
    /// Keep serving the final values this many seconds after the run ends, so a scraper
    /// reads them (Ctrl-C ends it early).
    #[arg(long, value_name = "SECONDS", requires = "metrics",
          value_parser = crate::flows::parse_timeout)]
    pub(crate) metrics_linger: Option<f64>,
}

/// The value behind `m`, also after a thread panicked holding it (the counters stay usable).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the server thread reads.
struct Shared {
    board: Board,
    counts: Mutex<FlowCounts>,
    live: Option<Arc<LiveMonitor>>,
    /// `rampart firewall`'s counters, as last published.
    firewall: Mutex<Option<FirewallCounts>>,
    ended: AtomicBool,
    /// Per-prefix RTT histograms (`rtt --aggregate`), updated as each interval closes.
    prefix_rtt: OnceLock<Arc<Mutex<PrefixRtt>>>,
}

impl Shared {
    fn page(&self) -> String {
        let summary = self.board.total();
        let flows = lock(&self.counts).clone();
        let firewall = lock(&self.firewall).clone();
        let live = self.live.as_ref().map(|m| {
            let s = m.stats();
            LiveCounts {
                received: s.received,
                kernel_dropped: s.kernel_dropped,
                rampart_dropped: s.rampart_dropped,
                freezes: s.freezes,
            }
        });
        let mut page = prometheus::render(&Page {
            summary: &summary,
            flows: &flows,
            live,
            firewall: firewall.as_ref(),
            ended: self.ended.load(Ordering::Acquire),
        });
        if let Some(p) = self.prefix_rtt.get() {
            let mut e = prometheus::Exposition::new();
            lock(p).render(&mut e);
            page.push_str(&e.finish());
        }
        page
    }
}

/// A running endpoint.
pub(crate) struct Metrics {
    shared: Arc<Shared>,
    addr: SocketAddr,
    linger: Option<f64>,
}

impl Metrics {
    /// Binds `--metrics`' address and starts serving, or `None` without the option. An
    /// address that cannot be bound (in use, not local, not an address) is exit status 2,
    /// naming it.
    pub(crate) fn start(
        args: &MetricsArgs,
        capture: Option<&Capture>,
    ) -> Result<Option<Self>, Fail> {
        let Some(addr) = &args.metrics else { return Ok(None) };
        let bad = |e: io::Error| Fail(format!("--metrics {addr}: {e}"), 2);
        let listener = TcpListener::bind(addr.as_str()).map_err(bad)?;
        let local = listener.local_addr().map_err(bad)?;
        if local.port() != addr.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0) {
            eprintln!("rampart: metrics at http://{local}/metrics");
        }
        let shared = Arc::new(Shared {
            board: Board::new(PUBLISH_EVERY),
            counts: Mutex::default(),
            live: capture.and_then(Capture::live_monitor),
            firewall: Mutex::default(),
            ended: AtomicBool::new(false),
            prefix_rtt: OnceLock::new(),
        });
        let serving = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("rampart-metrics".into())
            .spawn(move || serve(&listener, &serving))
            .map_err(|e| Fail(format!("--metrics {addr}: starting its thread: {e}"), 1))?;
        Ok(Some(Self { shared, addr: local, linger: args.metrics_linger }))
    }

    /// The board the run publishes its counters on.
    pub(crate) fn board(&self) -> Board {
        self.shared.board.clone()
    }

    /// The per-prefix RTT histograms the page shows (`rtt --aggregate`), at most `max`
    /// prefixes with series of their own; made on the first call.
    pub(crate) fn prefix_rtt(&self, max: usize) -> Arc<Mutex<PrefixRtt>> {
        Arc::clone(self.shared.prefix_rtt.get_or_init(|| Arc::new(Mutex::new(PrefixRtt::new(max)))))
    }

    /// A counter of records and samples for the run's sink.
    pub(crate) fn meter(&self) -> Meter {
        Meter {
            counts: FlowCounts::default(),
            shared: Arc::clone(&self.shared),
            next: Instant::now(),
        }
    }

    /// The run has ended: `meter`'s counts are published and the page says the values are
    /// final; then the endpoint stays up for `--metrics-linger` (Ctrl-C ends that early).
    pub(crate) fn end(&self, meter: Option<Meter>, stop: &AtomicBool) {
        if let Some(m) = meter {
            m.publish();
        }
        self.shared.ended.store(true, Ordering::Release);
        let Some(secs) = self.linger else { return };
        // Ctrl-C during the run already set the flag: the linger still serves the final
        // values then, and a second Ctrl-C exits at once.
        let interrupted = stop.load(Ordering::Relaxed);
        let until = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < until && (interrupted || !stop.load(Ordering::Relaxed)) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Publishes the firewall's counters (`rampart firewall`; at most every
    /// [`PUBLISH_EVERY`] during the run, and once at its end).
    pub(crate) fn publish_firewall(&self, f: &FirewallCounts) {
        match &mut *lock(&self.shared.firewall) {
            Some(p) => p.clone_from(f),
            slot => *slot = Some(f.clone()),
        }
    }

    /// The address served.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Records and samples counted on the reading thread, published at most every
/// [`PUBLISH_EVERY`].
pub(crate) struct Meter {
    counts: FlowCounts,
    shared: Arc<Shared>,
    next: Instant,
}

impl Meter {
    fn publish(&self) {
        lock(&self.shared.counts).clone_from(&self.counts);
    }

    /// Counts a flow record (by its end reason and application).
    pub(crate) fn record(&mut self, r: &rampart_engine::FlowRecord) {
        self.counts.record(r);
    }

    /// Publishes the counts if [`PUBLISH_EVERY`] has passed since the last time.
    pub(crate) fn tick(&mut self) {
        let now = Instant::now();
        if now >= self.next {
            self.publish();
            self.next = now + PUBLISH_EVERY;
        }
    }
}

/// A sink that counts flow records and RTT samples for the metrics before handing them on;
/// without a meter it only hands them on. Samples reach the inner sink only when it wants
/// them (the run makes them for the RTT histograms when metrics are served).
pub(crate) struct Metered<'a> {
    pub(crate) inner: &'a mut dyn Sink,
    pub(crate) meter: Option<Meter>,
    pub(crate) samples: bool,
}

impl Sink for Metered<'_> {
    #[inline]
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match (e, &mut self.meter) {
            (Event::Flow(r), Some(m)) => m.counts.record(r),
            (Event::Sample(s), Some(m)) => {
                m.counts.sample(s);
                if !self.samples {
                    return Ok(());
                }
            }
            _ => {}
        }
        self.inner.event(e)
    }

    fn tick(&mut self) -> io::Result<()> {
        if let Some(m) = &mut self.meter {
            m.tick();
        }
        self.inner.tick()
    }
}

/// Answers connections one at a time, for as long as the process lives.
fn serve(listener: &TcpListener, shared: &Shared) {
    for stream in listener.incoming() {
        match stream {
            // A client that misbehaves only loses its own answer.
            Ok(s) => {
                let _ = answer(s, shared);
            }
            // Out of descriptors, or the like: wait a little rather than spin.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Reads one request (its head, up to 8 KiB, within 5 s) and answers it.
fn answer(mut s: TcpStream, shared: &Shared) -> io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > 8192 {
            return respond(&mut s, "431 Request Header Fields Too Large", "text/plain", b"");
        }
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let page = shared.page();
            let body = if method == "HEAD" { &b""[..] } else { page.as_bytes() };
            respond_len(&mut s, "200 OK", prometheus::CONTENT_TYPE, body, page.len())
        }
        ("GET" | "HEAD", _) => respond(&mut s, "404 Not Found", "text/plain", b"not found\n"),
        _ => respond(&mut s, "405 Method Not Allowed", "text/plain", b"GET only\n"),
    }
}

fn respond(s: &mut TcpStream, status: &str, ctype: &str, body: &[u8]) -> io::Result<()> {
    respond_len(s, status, ctype, body, body.len())
}

fn respond_len(
    s: &mut TcpStream,
    status: &str,
    ctype: &str,
    body: &[u8],
    len: usize,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len}\r\n\
         Connection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_metrics_and_404_elsewhere() {
        let args = MetricsArgs { metrics: Some("127.0.0.1:0".into()), metrics_linger: None };
        let Ok(Some(m)) = Metrics::start(&args, None) else { panic!("not served") };
        let mut meter = m.meter();
        meter.counts.ended[1] = 2;
        m.end(Some(meter), &AtomicBool::new(false));
        let ok = get(m.addr(), "/metrics");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("Content-Type: text/plain; version=0.0.4"), "{ok}");
        assert!(ok.contains("rampart_flows_ended_total{reason=\"fin\"} 2\n"), "{ok}");
        assert!(ok.contains("rampart_run_ended 1\n"), "{ok}");
        assert!(get(m.addr(), "/").starts_with("HTTP/1.1 404 "));
    }

    #[test]
    fn an_address_in_use_names_it() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let args = MetricsArgs { metrics: Some(addr.clone()), metrics_linger: None };
        let Err(Fail(msg, 2)) = Metrics::start(&args, None) else { panic!("bound twice") };
        assert!(msg.contains(&addr), "{msg}");
    }
}
