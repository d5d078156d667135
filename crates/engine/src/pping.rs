//! The `--compat pping` driver: its own loop, because pping's flow limit, clean-up clock and
//! counters are its own and global (so it also stays on one thread).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rampart_capture::{Capture, Filter};
use rampart_rtt::compat::{CompatCounters, CompatSample};
use rampart_rtt::{CompatConfig, PpingCompat, compat_view};
use rampart_wire::PacketMeta;

use crate::{Outcome, RunError, Summary};

/// What `--compat pping` reports besides samples, in pping's order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CompatEvent<'a> {
    /// A sample.
    Sample(&'a CompatSample),
    /// The first usable packet, at these whole seconds (pping's "First packet at").
    First(i64),
    /// An interval summary.
    Summary(CompatCounters),
    /// `-c` or `-s` was reached: the counters and the capture seconds covered.
    Stop(CompatCounters, f64),
    /// A batch was processed, or a live capture was quiet for about 100 ms.
    Tick,
}

/// The `--compat pping` loop: every frame goes through pping's filter and parser model
/// ([`compat_view`]), then an extra filter expression if given (pping's `tcp and (EXPR)`), then
/// pping's algorithm. Samples and pping's other reports go to `on` in the order pping prints
/// them. The summary counts frames as [`crate::run`] does; flows are pping's directions.
pub fn run_pping(
    capture: &mut Capture,
    cfg: &CompatConfig,
    mut filter: Option<&mut Filter>,
    stop: &AtomicBool,
    on: &mut dyn FnMut(CompatEvent<'_>) -> io::Result<()>,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Outcome> {
    let started = Instant::now();
    let mut pping = PpingCompat::new(*cfg);
    let live = capture.is_live();
    let mut s = Summary::default();
    let mut error: Option<RunError> = None;
    'run: loop {
        if stop.load(Ordering::Relaxed) {
            s.interrupted = true;
            break;
        }
        if live && cfg.seconds > 0.0 && started.elapsed().as_secs_f64() >= cfg.seconds {
            break;
        }
        let batch = match capture.next_batch(256) {
            Ok(b) if b.is_empty() && live => {
                progress(capture.position());
                on(CompatEvent::Tick)?;
                continue;
            }
            Ok(b) if b.is_empty() => break,
            Ok(b) => b,
            Err(e) => {
                error = Some(e.into());
                break;
            }
        };
        for frame in batch.iter() {
            let mut meta = PacketMeta::default();
            s.parse(&frame, &mut meta);
            let view = compat_view(frame.link, frame.data, &meta);
            if view == rampart_rtt::CompatView::Filtered {
                s.filtered += 1;
                continue;
            }
            if let Some(f) = filter.as_deref_mut() {
                match f.matches(frame.link, frame.data) {
                    Ok(true) => {}
                    Ok(false) => {
                        s.filtered += 1;
                        continue;
                    }
                    Err(e) => {
                        error = Some(e.into());
                        break 'run;
                    }
                }
            }
            s.tracked += 1;
            let step = pping.packet(frame.ts, &view);
            if step.first
                && let Some(secs) = pping.first_secs()
            {
                on(CompatEvent::First(secs))?;
            }
            if step.sample
                && let Some(x) = pping.sample()
            {
                s.samples += 1;
                on(CompatEvent::Sample(x))?;
            }
            if step.stop {
                on(CompatEvent::Stop(pping.reported(), pping.elapsed()))?;
                break 'run;
            }
            if step.summary {
                on(CompatEvent::Summary(pping.reported()))?;
            }
        }
        progress(capture.position());
        on(CompatEvent::Tick)?;
    }
    s.kernel = capture.kernel_stats();
    s.flows = pping.counters().flows.max(0) as u64;
    s.elapsed = started.elapsed();
    Ok(Outcome { summary: s, error })
}
