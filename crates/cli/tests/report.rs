//! `rampart report`: the page from a capture and from `rampart flows` records is one
//! self-contained file (nothing to fetch: no URL, no `src`, `href`, `url(` or script), has
//! every chart, escapes what the records say, and, when Debian's `chromium` is installed,
//! draws every chart offline.
//!
//! How the screenshot is judged: every chart's plot area is a rectangle of one colour
//! (`PLOT_BG`) crossed by grid lines of another (`GRID`), colours used nowhere else on the
//! page, and the marks stay inside it. The test finds the connected regions of those two
//! colours in the PNG: there must be one per chart in the HTML (a page that failed to render,
//! or a chart that was not drawn, has fewer), and inside each region's bounding box some
//! pixels must be neither colour (the bars or points were drawn). Chromium is skipped (one
//! line) when it is not installed, and fails the test under `RAMPART_REQUIRE_TOOLS`.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const PLOT_BG: [u8; 3] = [0xf4, 0xf4, 0xee];
const GRID: [u8; 3] = [0xdc, 0xdc, 0xd2];
const CHARTS: [&str; 10] = [
    "chart-rtt-time",
    "chart-rtt-hist",
    "chart-rtt-hosts",
    "chart-hosts-bytes",
    "chart-hosts-packets",
    "chart-flows-bytes",
    "chart-flows-packets",
    "chart-apps-flows",
    "chart-apps-bytes",
    "chart-tcp-flags",
];

fn sample() -> String {
    repo().join("samples/mixed.pcap").display().to_string()
}

/// The page fetches nothing and has every chart.
fn check_page(html: &str) {
    for bad in ["http://", "https://", "src=", "href=", "url(", "<script", "<link", "@import"] {
        assert!(!html.contains(bad), "the page has {bad}");
    }
    assert!(html.contains("default-src 'none'"));
    for id in CHARTS.iter().chain(&["chart-end-reasons"]) {
        assert!(html.contains(&format!("<svg class=\"chart\" id=\"{id}\"")), "no {id}");
    }
}

#[test]
fn from_a_capture_and_from_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let out = rampart(&["report", "-r", &sample(), "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    check_page(&html);
    assert!(html.contains("Every sample is drawn"));
    screenshot("from_a_capture_and_from_its_records", &page, &html);

    // The same sample as records (and samples) written by `flows` and `rtt`.
    let flows = rampart(&["flows", "-r", &sample(), "-q"]);
    let records = dir.path().join("flows.jsonl");
    std::fs::write(&records, &flows.stdout).unwrap();
    let rtt = rampart(&["rtt", "-r", &sample(), "--format", "json"]);
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(&samples, &rtt.stdout).unwrap();
    let page2 = dir.path().join("records.html");
    let out = rampart(&[
        "report",
        "--records",
        records.to_str().unwrap(),
        "--samples",
        samples.to_str().unwrap(),
        "-o",
        page2.to_str().unwrap(),
        "--title",
        "<mixed>",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html2 = std::fs::read_to_string(&page2).unwrap();
    check_page(&html2);
    assert!(html2.contains("<title>&lt;mixed&gt;</title>"));
    // Both pages count the same flows, bytes and samples.
    let totals = |h: &str| {
        let at = h.find("<dt>Packets</dt>").unwrap();
        h[at..at + 200].split("</dl>").next().unwrap().to_string()
    };
    assert_eq!(totals(&html), totals(&html2));
    // Records alone: the per-flow summaries stand in for the samples.
    let page3 = dir.path().join("summaries.html");
    let out =
        rampart(&["report", "--records", records.to_str().unwrap(), "-o", page3.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html3 = std::fs::read_to_string(&page3).unwrap();
    assert!(html3.contains("RTT distribution (flow medians") && !html3.contains("chart-rtt-time"));
}

#[test]
fn bad_records_name_the_file_and_line_and_inputs_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("bad.jsonl");
    std::fs::write(
        &records,
        "{\"proto\":\"tcp\",\"src\":\"a\",\"dst\":\"b\",\"first\":1,\"last\":2,\"packets_fwd\":1,\
         \"bytes_fwd\":1,\"packets_rev\":0,\"bytes_rev\":0,\"sni\":\"<script>x</script>\"}\n\
         {\"proto\":\"tcp\",\"src\":\"a\"\n",
    )
    .unwrap();
    let page = dir.path().join("r.html");
    let out =
        rampart(&["report", "--records", records.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2: ", records.display())), "{err}");
    assert!(!page.exists());
    // The output named as the input: refused, the input untouched.
    let before = std::fs::read(&records).unwrap();
    let r = records.to_str().unwrap();
    let out = rampart(&["report", "--records", r, "-o", r]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to write over it"));
    assert_eq!(std::fs::read(&records).unwrap(), before);
    let copy = dir.path().join("copy.pcap");
    std::fs::copy(sample(), &copy).unwrap();
    let c = copy.to_str().unwrap();
    let out = rampart(&["report", "-r", c, "-o", c]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(sample()).unwrap());
    // Attacker-written text comes out escaped.
    std::fs::write(&records, before.split(|&b| b == b'\n').next().unwrap()).unwrap();
    let out = rampart(&["report", "--records", r, "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("&lt;script&gt;x&lt;/script&gt;") && !html.contains("<script"));
}

/// Screenshots `page` in headless Chromium (offline flags, a throw-away profile, at most 60 s,
/// killed by its PID after that) and checks every chart was drawn.
fn screenshot(test: &str, page: &Path, html: &str) {
    let Some(chromium) = rampart_testkit::tool(test, "chromium") else { return };
    let profile = tempfile::tempdir().unwrap();
    let png = page.with_extension("png");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--force-color-profile=srgb",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1280,4000")
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium exited with {status}");
            break;
        }
        if Instant::now() > until {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            panic!("chromium took more than 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let charts = html.matches("<svg class=\"chart\"").count();
    let regions = plot_areas(&png);
    eprintln!("plot areas: {regions:?}");
    assert_eq!(regions.len(), charts, "plot areas found in the screenshot: {regions:?}");
    for r in &regions {
        assert!(r.marks >= 40, "a chart with nothing drawn in it: {r:?}");
    }
    // Keep the screenshot for a person to look at.
    if let Some(keep) = std::env::var_os("RAMPART_REPORT_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}

/// A plot area found in the screenshot: its bounding box and how many pixels in it are
/// marks (neither the plot's background nor its grid).
#[derive(Debug)]
#[allow(dead_code)]
struct Region {
    x: (usize, usize),
    y: (usize, usize),
    pixels: usize,
    marks: usize,
}

fn plot_areas(png: &Path) -> Vec<Region> {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width as usize, info.height as usize);
    let step = info.color_type.samples();
    assert!(step >= 3, "not an RGB screenshot: {:?}", info.color_type);
    let rgb = |x: usize, y: usize| {
        let i = (y * w + x) * step;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    // Not blank: the page has more than one colour.
    assert!((0..h).step_by(7).any(|y| (0..w).any(|x| rgb(x, y) != rgb(0, 0))), "a blank page");
    let plot: Vec<bool> = (0..w * h)
        .map(|i| {
            let c = rgb(i % w, i / w);
            c == PLOT_BG || c == GRID
        })
        .collect();
    let mut seen = vec![false; w * h];
    let mut out = Vec::new();
    for start in 0..w * h {
        if !plot[start] || seen[start] {
            continue;
        }
        let (mut x0, mut x1, mut y0, mut y1, mut n) = (w, 0, h, 0, 0);
        let mut stack = vec![start];
        seen[start] = true;
        while let Some(i) = stack.pop() {
            let (x, y) = (i % w, i / w);
            (x0, x1, y0, y1, n) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y), n + 1);
            let mut push = |j: usize| {
                if plot[j] && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            };
            if x > 0 {
                push(i - 1);
            }
            if x + 1 < w {
                push(i + 1);
            }
            if y > 0 {
                push(i - w);
            }
            if y + 1 < h {
                push(i + w);
            }
        }
        // Plot areas are hundreds of pixels each way; anything small is something else.
        if n < 5_000 {
            continue;
        }
        let marks = (y0..=y1)
            .flat_map(|y| (x0..=x1).map(move |x| (x, y)))
            .filter(|&(x, y)| !plot[y * w + x])
            .count();
        out.push(Region { x: (x0, x1), y: (y0, y1), pixels: n, marks });
    }
    out
}
