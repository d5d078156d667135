//! The page: inline CSS, hand-written SVG charts, HTML tables; no script and no fetch.
//!
//! Every chart is an `<svg class="chart">` whose plot area is a rectangle of [`PLOT_BG`]
//! crossed by grid lines of [`GRID`], drawn crisp (no anti-aliasing), and whose marks (bars,
//! points) stay at least 5 % inside it; those two colours appear nowhere else on the page. A
//! test that screenshots the page finds each chart's plot area by them and checks that marks
//! were drawn inside it. Colours come from the Okabe–Ito palette, which stays distinct for
//! the common kinds of colour blindness.

use std::fmt::Write as _;

use super::{FLAGS, FlowRow, HostTraffic, Model, Options, RunInfo, Spread, endpoint};

/// The plot area's background colour.
pub const PLOT_BG: &str = "#f4f4ee";
/// The grid lines' colour.
pub const GRID: &str = "#dcdcd2";
/// Okabe–Ito: blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow.
pub const PALETTE: [&str; 7] =
    ["#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442"];

/// `s` escaped for HTML text and attribute values; control characters other than tab and
/// line breaks become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// At most `n` characters of `s`, with an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Bytes for people: `512 B`, `1.5 KiB`, `12.3 MiB`.
pub fn bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else if v < 10.0 {
        format!("{v:.2} {}", UNITS[u])
    } else if v < 100.0 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.0} {}", UNITS[u])
    }
}

/// A count with thousands separators: `1,234,567`; fractions with up to 2 significant
/// decimals (axis ticks).
pub fn count(n: f64) -> String {
    if n.fract() != 0.0 {
        return format!("{n:.2}").trim_end_matches('0').to_string();
    }
    let digits = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0.0 { format!("-{out}") } else { out }
}

/// A duration for people: `850 µs`, `12.3 ms`, `1.20 s`.
pub fn secs(s: f64) -> String {
    let (v, unit) = if s < 1e-3 {
        (s * 1e6, "µs")
    } else if s < 1.0 {
        (s * 1e3, "ms")
    } else {
        (s, "s")
    };
    if v < 10.0 && v.fract() != 0.0 {
        format!("{v:.2} {unit}").replace(".00 ", " ")
    } else if v < 100.0 && v.fract() != 0.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.0} {unit}")
    }
}

/// An epoch time as UTC `YYYY-MM-DD HH:MM:SS.mmm`.
fn utc(t: f64) -> String {
    let ns = (t * 1e9) as i128;
    match jiff::Timestamp::from_nanosecond(ns) {
        Ok(ts) => ts.strftime("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
        Err(_) => format!("{t:.3}"),
    }
}

/// Round tick values from 0 to at least `max`: steps of 1, 2 or 5 × 10^k, about `n` of them.
pub fn ticks(max: f64, n: usize) -> Vec<f64> {
    let max = if max > 0.0 && max.is_finite() { max } else { 1.0 };
    let raw = max / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step =
        [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(mag);
    let k = (max / step).ceil() as usize;
    (0..=k).map(|i| i as f64 * step).collect()
}

/// Ticks of a log axis over `lo..hi` (both > 0): 1, 2 and 5 × 10^k inside the range, or
/// only the decades when there are many.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mults: &[f64] = if b - a > 4 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let mut out = Vec::new();
    for e in a..=b {
        for m in mults {
            let v = m * 10f64.powi(e);
            if v >= lo * 0.999 && v <= hi * 1.001 {
                out.push(v);
            }
        }
    }
    out
}

/// A log axis: range padded to whole ticks.
fn log_range(min: f64, max: f64) -> (f64, f64) {
    let lo = min.max(1e-7);
    let hi = max.max(lo * 1.0001);
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil());
    (lo, hi)
}

/// The frame of a chart: the SVG, title, plot background and where to draw.
struct Frame {
    svg: String,
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
}

impl Frame {
    fn new(id: &str, title: &str, width: f64, height: f64, left: f64) -> Self {
        let (top, bottom, right) = (34.0, 48.0, 18.0);
        let mut svg = String::new();
        let _ = write!(
            svg,
            "<svg class=\"chart\" id=\"{id}\" \
             width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
             role=\"img\" aria-label=\"{t}\"><title>{t}</title>\
             <text class=\"ct\" x=\"{left}\" y=\"20\">{t}</text>",
            t = escape(title)
        );
        let (w, h) = (width - left - right, height - top - bottom);
        let _ = write!(
            svg,
            "<rect x=\"{left}\" y=\"{top}\" width=\"{w}\" height=\"{h}\" fill=\"{PLOT_BG}\" \
             shape-rendering=\"crispEdges\"/>"
        );
        Self { svg, x0: left, y0: top, w, h }
    }

    fn grid_v(&mut self, x: f64) {
        let x = x.round();
        let _ = write!(
            self.svg,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"{GRID}\" \
             shape-rendering=\"crispEdges\"/>",
            self.y0,
            self.y0 + self.h
        );
    }

    fn grid_h(&mut self, y: f64) {
        let y = y.round();
        let _ = write!(
            self.svg,
            "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{GRID}\" \
             shape-rendering=\"crispEdges\"/>",
            self.x0,
            self.x0 + self.w
        );
    }

    fn text(&mut self, x: f64, y: f64, anchor: &str, class: &str, s: &str) {
        let _ = write!(
            self.svg,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" class=\"{class}\">{}</text>",
            escape(s)
        );
    }

    fn x_label(&mut self, s: &str) {
        let (x, y) = (self.x0 + self.w / 2.0, self.y0 + self.h + 40.0);
        self.text(x, y, "middle", "al", s);
    }

    fn y_label(&mut self, s: &str) {
        let (x, y) = (14.0, self.y0 + self.h / 2.0);
        let _ = write!(
            self.svg,
            "<text transform=\"translate({x},{y:.1}) rotate(-90)\" text-anchor=\"middle\" \
             class=\"al\">{}</text>",
            escape(s)
        );
    }

    fn legend(&mut self, items: &[(&str, &str)]) {
        let mut x = self.x0 + self.w;
        for (name, colour) in items.iter().rev() {
            let width = 7.0 * name.chars().count() as f64 + 22.0;
            x -= width;
            let _ = write!(
                self.svg,
                "<rect x=\"{x:.1}\" y=\"10\" width=\"10\" height=\"10\" fill=\"{colour}\"/>"
            );
            self.text(x + 14.0, 19.0, "start", "lg", name);
        }
    }

    fn end(mut self) -> String {
        self.svg.push_str("</svg>");
        self.svg
    }
}

/// A horizontal bar chart: one row per item, each bar a stack of its values in `series`
/// colours; x from 0 with `unit` formatting its ticks.
fn bars(
    id: &str,
    title: &str,
    axis: &str,
    items: &[(String, Vec<f64>)],
    series: &[&str],
    unit: fn(f64) -> String,
    width: f64,
) -> String {
    let row = 22.0;
    let height = 34.0 + 48.0 + row * items.len().max(1) as f64 + 8.0;
    let mut f = Frame::new(id, title, width, height, 190.0);
    let max = items.iter().map(|(_, v)| v.iter().sum::<f64>()).fold(0.0, f64::max);
    let t = ticks(max, 5);
    let top = t.last().copied().unwrap_or(1.0).max(f64::MIN_POSITIVE);
    let scale = f.w * 0.95 / top;
    for v in &t {
        let x = f.x0 + v * scale;
        f.grid_v(x);
        let y = f.y0 + f.h + 16.0;
        f.text(x, y, "middle", "tk", &unit(*v));
    }
    for (i, (label, values)) in items.iter().enumerate() {
        let y = f.y0 + 4.0 + i as f64 * row;
        let mut x = f.x0 + 1.0;
        for (j, v) in values.iter().enumerate() {
            let w = v * scale;
            if w > 0.0 {
                let _ = write!(
                    f.svg,
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" \
                     fill=\"{}\"><title>{}: {}</title></rect>",
                    row - 6.0,
                    PALETTE[j % PALETTE.len()],
                    escape(label),
                    escape(&unit(*v))
                );
            }
            x += w;
        }
        f.text(f.x0 - 6.0, y + row / 2.0 + 1.0, "end", "bl", &clip(label, 28));
    }
    if series.len() > 1 {
        let legend: Vec<(&str, &str)> =
            series.iter().enumerate().map(|(i, s)| (*s, PALETTE[i % PALETTE.len()])).collect();
        f.legend(&legend);
    }
    f.x_label(axis);
    f.end()
}

/// RTT over capture time: points per direction, log y.
fn rtt_scatter(m: &Model, width: f64) -> String {
    let mut f =
        Frame::new("chart-rtt-time", "RTT over time (each point one sample)", width, 340.0, 70.0);
    let all = m.series.iter().flatten();
    let (lo, hi) = all.clone().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let tmax = all.fold(0.0f64, |a, p| a.max(p.0));
    let (lo, hi) = if lo.is_finite() { log_range(lo, hi) } else { (1e-3, 1.0) };
    let (ll, lh) = (lo.log10(), hi.log10());
    let (ih, iw) = (f.h * 0.95, f.w * 0.95);
    let (x0, y0, h) = (f.x0, f.y0, f.h);
    let y_of = |v: f64| y0 + h - (h - ih) / 2.0 - (v.max(lo).log10() - ll) / (lh - ll) * ih;
    for v in log_ticks(lo, hi) {
        let y = y_of(v);
        f.grid_h(y);
        f.text(x0 - 6.0, y + 4.0, "end", "tk", &secs(v));
    }
    let t = ticks(tmax, 8);
    let tt = t.last().copied().unwrap_or(1.0).max(f64::MIN_POSITIVE);
    let fw = f.w;
    let x_of = |v: f64| x0 + (fw - iw) / 2.0 + v / tt * iw;
    for v in &t {
        let x = x_of(*v);
        f.grid_v(x);
        f.text(x, y0 + h + 16.0, "middle", "tk", &count(*v));
    }
    for (i, pts) in m.series.iter().enumerate() {
        let _ = write!(f.svg, "<g fill=\"{}\" fill-opacity=\"0.75\">", PALETTE[i]);
        for (t, v) in pts {
            let _ =
                write!(f.svg, "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"1.8\"/>", x_of(*t), y_of(*v));
        }
        f.svg.push_str("</g>");
    }
    f.legend(&[("to the responder", PALETTE[0]), ("to the initiator", PALETTE[1])]);
    f.x_label("capture time since the first packet (s)");
    f.y_label("RTT (log scale)");
    f.end()
}

/// Histogram of RTTs in log-spaced bins.
fn rtt_histogram(m: &Model, width: f64) -> String {
    let what = if m.rtts_are_samples { "samples" } else { "flow medians" };
    let mut f = Frame::new(
        "chart-rtt-hist",
        &format!("RTT distribution ({what}, log-spaced bins)"),
        width,
        300.0,
        70.0,
    );
    let (lo, hi) = match (m.rtts.first(), m.rtts.last()) {
        (Some(a), Some(b)) => log_range(*a, *b),
        _ => (1e-3, 1.0),
    };
    let (ll, lh) = (lo.log10(), hi.log10());
    let bins = 40usize;
    let mut counts = vec![0u64; bins];
    for v in &m.rtts {
        let b = ((v.max(lo).log10() - ll) / (lh - ll) * bins as f64) as usize;
        counts[b.min(bins - 1)] += 1;
    }
    let max = counts.iter().copied().max().unwrap_or(0) as f64;
    let t = ticks(max, 5);
    let top = t.last().copied().unwrap_or(1.0).max(1.0);
    let (x0, y0, w, h) = (f.x0, f.y0, f.w, f.h);
    let ih = h * 0.95;
    for v in &t {
        let y = y0 + h - v / top * ih;
        f.grid_h(y);
        f.text(x0 - 6.0, y + 4.0, "end", "tk", &count(*v));
    }
    let iw = w * 0.95;
    let xl = x0 + (w - iw) / 2.0;
    for v in log_ticks(lo, hi) {
        let x = xl + (v.log10() - ll) / (lh - ll) * iw;
        f.grid_v(x);
        f.text(x, y0 + h + 16.0, "middle", "tk", &secs(v));
    }
    let bw = iw / bins as f64;
    for (i, c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let bh = (*c as f64 / top * ih).max(1.0);
        let _ = write!(
            f.svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{}\">\
             <title>{} to {}: {c}</title></rect>",
            xl + i as f64 * bw + 0.5,
            y0 + h - bh,
            (bw - 1.0).max(0.5),
            PALETTE[2],
            secs(10f64.powf(ll + (lh - ll) * i as f64 / bins as f64)),
            secs(10f64.powf(ll + (lh - ll) * (i + 1) as f64 / bins as f64)),
        );
    }
    f.x_label("RTT (log scale)");
    f.y_label(what);
    f.end()
}

fn cell(out: &mut String, s: &str, num: bool) {
    let _ = write!(out, "<td{}>{}</td>", if num { " class=\"n\"" } else { "" }, escape(s));
}

fn table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    out.push_str("<table><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            // Columns after the first two that start with a digit are right-aligned numbers.
            let num = i > 0 && c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '–');
            cell(out, c, num);
        }
        out.push_str("</tr>");
    }
    if rows.is_empty() {
        let _ = write!(out, "<tr><td colspan=\"{}\">none</td></tr>", head.len());
    }
    out.push_str("</tbody></table>");
}

fn spread_rows(v: &[(String, Spread)]) -> Vec<Vec<String>> {
    v.iter()
        .map(|(k, s)| {
            vec![
                k.clone(),
                count(s.count as f64),
                secs(s.min),
                secs(s.median),
                s.p95.map_or("–".into(), secs),
                secs(s.max),
            ]
        })
        .collect()
}

fn flow_name(f: &FlowRow) -> String {
    format!("{} {} → {}", f.proto, endpoint(&f.src, f.sport), endpoint(&f.dst, f.dport))
}

fn flow_rows(v: &[FlowRow]) -> Vec<Vec<String>> {
    v.iter()
        .map(|f| {
            vec![
                flow_name(f),
                f.app.clone().unwrap_or_default(),
                f.server_name.clone().unwrap_or_default(),
                count(f.packets[0] as f64),
                count(f.packets[1] as f64),
                bytes(f.bytes[0] as f64),
                bytes(f.bytes[1] as f64),
                secs(f.last - f.first),
                f.end_reason.clone(),
            ]
        })
        .collect()
}

fn host_rows(v: &[(String, HostTraffic)]) -> Vec<Vec<String>> {
    v.iter()
        .map(|(h, t)| {
            vec![
                h.clone(),
                bytes(t.bytes_out as f64),
                bytes(t.bytes_in as f64),
                count(t.packets_out as f64),
                count(t.packets_in as f64),
                count(t.flows as f64),
            ]
        })
        .collect()
}

const STYLE: &str = "body{font-family:sans-serif;color:#222;background:#fff;margin:16px 24px;\
max-width:1240px}h1{font-size:22px;margin:4px 0 8px}h2{font-size:17px;margin:22px 0 6px;\
border-bottom:1px solid #ccc;padding-bottom:3px}p.note{color:#555;font-size:13px;margin:4px 0}\
dl.sum{display:grid;grid-template-columns:repeat(4,auto);gap:2px 18px;font-size:14px;margin:0}\
dl.sum dt{color:#555}dl.sum dd{margin:0;font-weight:bold}.row{display:flex;flex-wrap:wrap;\
gap:16px;align-items:flex-start}svg.chart{display:block;background:#fff}svg text{font-family:\
sans-serif;fill:#222}.ct{font-size:14px;font-weight:bold}.tk{font-size:11px;fill:#444}\
.al{font-size:12px;fill:#333}.bl{font-size:11px}.lg{font-size:11px}table{border-collapse:\
collapse;font-size:12px;margin:6px 0}th,td{padding:2px 8px;border-bottom:1px solid #e4e4e4;\
text-align:left;white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}\
th{background:#f0f0f0}";

/// The whole page for `m`.
pub fn page(m: &Model, run: &RunInfo, opts: &Options) -> String {
    let mut o = String::with_capacity(256 * 1024);
    let title = escape(&opts.title);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <meta name=\"generator\" content=\"rampart report\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n"
    );
    // Header.
    let packets = run.packets.unwrap_or(m.packets);
    let wire = run.wire_bytes.unwrap_or(m.bytes);
    let span = match m.span {
        Some((a, b)) => format!("{} + {}", utc(a), secs(b - a)),
        None => "–".into(),
    };
    o.push_str("<dl class=\"sum\">");
    for (k, v) in [
        ("Source", run.source.clone()),
        ("Time span", span),
        ("Packets", count(packets as f64)),
        ("Bytes on the wire", bytes(wire as f64)),
        ("Flows", count(m.flows as f64)),
        ("RTT samples", count(m.samples as f64)),
    ] {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(&v));
    }
    o.push_str("</dl>\n");
    if run.interrupted {
        o.push_str(
            "<p class=\"note\">The run was interrupted: this covers the input read up to then.</p>",
        );
    }

    // RTT.
    o.push_str("<h2>Round-trip time</h2>\n");
    if m.rtts.is_empty() {
        o.push_str("<p class=\"note\">No RTT samples (RTTs come from TCP flows).</p>");
    } else {
        if m.samples > 0 {
            let drawn = m.series[0].len() + m.series[1].len();
            let total = m.series_total[0] + m.series_total[1];
            let _ = write!(
                o,
                "<p class=\"note\">RTT from the capture point to a host and back, one point \
                 per sample. {}</p>",
                if drawn < total {
                    format!(
                        "{} of {} samples drawn: capture time is cut into equal buckets and \
                         each keeps its smallest and largest sample.",
                        count(drawn as f64),
                        count(total as f64)
                    )
                } else {
                    "Every sample is drawn.".into()
                }
            );
            o.push_str(&rtt_scatter(m, 1220.0));
        } else {
            o.push_str(
                "<p class=\"note\">The records carry per-flow RTT summaries only: give the \
                 samples (<code>rampart rtt --format json</code>) with <code>--samples</code> \
                 for RTT over time.</p>",
            );
        }
        o.push_str("<div class=\"row\">");
        o.push_str(&rtt_histogram(m, 600.0));
        let items: Vec<(String, Vec<f64>)> =
            m.rtt_hosts.iter().map(|(h, s)| (h.clone(), vec![s.median])).collect();
        o.push_str(&bars(
            "chart-rtt-hosts",
            "Median RTT per host (hosts with most samples)",
            "median RTT to the host",
            &items,
            &["median"],
            secs,
            600.0,
        ));
        o.push_str("</div>");
        let head =
            ["flow (RTT measured to the first end)", "samples", "min", "median", "p95", "max"];
        o.push_str("<div class=\"row\"><div>");
        table(&mut o, &head, &spread_rows(&m.rtt_flows));
        o.push_str("</div><div>");
        table(
            &mut o,
            &["host", "samples", "min", "median", "p95", "max"],
            &spread_rows(&m.rtt_hosts),
        );
        o.push_str("</div></div>\n");
    }

    // Top talkers.
    o.push_str("<h2>Top talkers</h2>\n<div class=\"row\">");
    let items: Vec<(String, Vec<f64>)> = m
        .hosts_by_bytes
        .iter()
        .map(|(h, t)| (h.clone(), vec![t.bytes_out as f64, t.bytes_in as f64]))
        .collect();
    o.push_str(&bars(
        "chart-hosts-bytes",
        "Hosts by bytes",
        "bytes on the wire",
        &items,
        &["sent", "received"],
        bytes,
        600.0,
    ));
    let items: Vec<(String, Vec<f64>)> = m
        .hosts_by_packets
        .iter()
        .map(|(h, t)| (h.clone(), vec![t.packets_out as f64, t.packets_in as f64]))
        .collect();
    o.push_str(&bars(
        "chart-hosts-packets",
        "Hosts by packets",
        "packets",
        &items,
        &["sent", "received"],
        count,
        600.0,
    ));
    let flow_items = |v: &[FlowRow], by_bytes: bool| -> Vec<(String, Vec<f64>)> {
        v.iter()
            .map(|f| {
                let vals = if by_bytes { f.bytes } else { f.packets };
                let label =
                    format!("{} → {}", endpoint(&f.src, f.sport), endpoint(&f.dst, f.dport));
                (label, vec![vals[0] as f64, vals[1] as f64])
            })
            .collect()
    };
    o.push_str(&bars(
        "chart-flows-bytes",
        "Flows by bytes",
        "bytes on the wire",
        &flow_items(&m.flows_by_bytes, true),
        &["initiator → responder", "back"],
        bytes,
        600.0,
    ));
    o.push_str(&bars(
        "chart-flows-packets",
        "Flows by packets",
        "packets",
        &flow_items(&m.flows_by_packets, false),
        &["initiator → responder", "back"],
        count,
        600.0,
    ));
    o.push_str("</div>\n");
    table(
        &mut o,
        &["host", "bytes sent", "bytes received", "packets sent", "packets received", "flows"],
        &host_rows(&m.hosts_by_bytes),
    );
    table(
        &mut o,
        &[
            "flow",
            "app",
            "server name",
            "pkts →",
            "pkts ←",
            "bytes →",
            "bytes ←",
            "duration",
            "end",
        ],
        &flow_rows(&m.flows_by_bytes),
    );

    // Applications.
    o.push_str("<h2>Applications</h2>\n");
    if !m.has_apps {
        o.push_str("<p class=\"note\">The records carry no application labels (identification was off).</p>");
    } else {
        o.push_str("<div class=\"row\">");
        let mut by_flows = m.apps.clone();
        by_flows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let items: Vec<(String, Vec<f64>)> =
            by_flows.iter().map(|(a, n, _)| (a.clone(), vec![*n as f64])).collect();
        o.push_str(&bars(
            "chart-apps-flows",
            "Applications by flows",
            "flows",
            &items,
            &["flows"],
            count,
            600.0,
        ));
        let items: Vec<(String, Vec<f64>)> =
            m.apps.iter().map(|(a, _, b)| (a.clone(), vec![*b as f64])).collect();
        o.push_str(&bars(
            "chart-apps-bytes",
            "Applications by bytes",
            "bytes on the wire",
            &items,
            &["bytes"],
            bytes,
            600.0,
        ));
        o.push_str("</div>\n");
    }

    // Flags and end reasons.
    o.push_str("<h2>TCP flags and end reasons</h2>\n<div class=\"row\">");
    let items: Vec<(String, Vec<f64>)> = FLAGS
        .iter()
        .zip(m.tcp_flags.0)
        .map(|((name, _), n)| ((*name).to_string(), vec![n as f64]))
        .collect();
    o.push_str(&bars(
        "chart-tcp-flags",
        &format!("TCP flows with each flag seen (of {})", count(m.tcp_flags.1 as f64)),
        "TCP flows",
        &items,
        &["flows"],
        count,
        600.0,
    ));
    let items: Vec<(String, Vec<f64>)> =
        m.end_reasons.iter().map(|(e, n)| (e.clone(), vec![*n as f64])).collect();
    o.push_str(&bars(
        "chart-end-reasons",
        "Why flows ended",
        "flows",
        &items,
        &["flows"],
        count,
        600.0,
    ));
    o.push_str(
        "</div>\n<p class=\"note\">End reasons: <b>idle</b> no packet for the flow \
        timeout, <b>fin</b> closed by FINs, <b>rst</b> reset, <b>evicted</b> pushed out of a full \
        table, <b>end</b> still open at the end of the input.</p>\n",
    );

    // Firewall.
    if !m.verdicts.is_empty() {
        o.push_str("<h2>Verdicts and rule hits</h2>\n<div class=\"row\">");
        let items: Vec<(String, Vec<f64>)> =
            m.verdicts.iter().map(|(v, n, _)| (v.clone(), vec![*n as f64])).collect();
        o.push_str(&bars(
            "chart-verdicts",
            "Flows by last verdict",
            "flows",
            &items,
            &["flows"],
            count,
            600.0,
        ));
        let items: Vec<(String, Vec<f64>)> =
            m.rules.iter().map(|(r, v, n, _)| (format!("{r} ({v})"), vec![*n as f64])).collect();
        o.push_str(&bars(
            "chart-rules",
            "Rule hits (flows decided)",
            "flows",
            &items,
            &["flows"],
            count,
            600.0,
        ));
        o.push_str("</div>\n");
        let rows: Vec<Vec<String>> = m
            .rules
            .iter()
            .map(|(r, v, n, b)| vec![r.clone(), v.clone(), count(*n as f64), bytes(*b as f64)])
            .collect();
        table(&mut o, &["rule", "verdict", "flows", "bytes"], &rows);
        if !m.ct_states.is_empty() {
            let rows: Vec<Vec<String>> =
                m.ct_states.iter().map(|(c, n)| vec![c.clone(), count(*n as f64)]).collect();
            table(&mut o, &["ct state", "flows"], &rows);
        }
    }
    o.push_str(
        "<p class=\"note\">Made by rampart report. Bytes are frame lengths on the wire; \
        KiB = 1024 B. Times are UTC.</p>\n</body></html>\n",
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            escape("<script>alert('x')</script>&\"\u{7}é"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;\u{fffd}é"
        );
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }

    #[test]
    fn numbers_for_people() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(bytes(12.5 * 1048576.0), "12.5 MiB");
        assert_eq!(count(1234567.0), "1,234,567");
        assert_eq!(count(0.0), "0");
        assert_eq!(secs(0.000850), "850 µs");
        assert_eq!(secs(0.0123), "12.3 ms");
        assert_eq!(secs(0.002), "2 ms");
        assert_eq!(secs(1.2), "1.20 s");
        assert_eq!(ticks(93.0, 5), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(log_ticks(0.001, 0.1), vec![0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1]);
        assert_eq!(log_range(0.0031, 0.047), (0.001, 0.1));
    }
}
