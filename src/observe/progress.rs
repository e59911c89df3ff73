//! The live progress bar on stderr (only on a terminal): done/total or elapsed/duration, req/s
//! over the last second, errors and p99 so far, redrawn from what the workers publish.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::observe::live::{Live, Progress, PUBLISH_EVERY};
use crate::plan::StopRule;
use crate::units::{counted, format_micros};

/// A progress bar being redrawn by its own thread until [`Display::finish`].
#[derive(Debug)]
pub(crate) struct Display {
    stop: Sender<()>,
    drawer: JoinHandle<()>,
}

impl Display {
    /// Starts drawing the progress of `live` towards `goal`, labelled `label`.
    pub(crate) fn start(live: Arc<Live>, goal: StopRule, label: String) -> Self {
        let (stop, stopped) = mpsc::channel();
        let drawer = std::thread::spawn(move || {
            let bar = new_bar(goal, label);
            let began = Instant::now();
            let mut last = (began, 0);
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(PUBLISH_EVERY) {
                let now = Instant::now();
                let progress = live.progress();
                // The rate over roughly the last second, so the figure follows the run's changes.
                let window = now - last.0;
                let rate = (progress.done - last.1) as f64 / window.as_secs_f64().max(1e-3);
                if window >= Duration::from_secs(1) {
                    last = (now, progress.done);
                }
                update(&bar, goal, now - began, progress, rate);
            }
            bar.finish_and_clear();
        });
        Display { stop, drawer }
    }

    /// Removes the bar, so the report follows on a clean line.
    pub(crate) fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.drawer.join();
    }
}

fn new_bar(goal: StopRule, label: String) -> ProgressBar {
    let (length, template) = match goal {
        StopRule::Requests(count) => (
            count,
            "{prefix} [{elapsed_precise}] {wide_bar:.cyan/blue} {pos}/{len} {msg}",
        ),
        StopRule::Duration { warm_up, measure } => (
            (warm_up + measure).as_millis() as u64,
            "{prefix} [{elapsed_precise}] {wide_bar:.cyan/blue} {msg}",
        ),
    };
    let bar = ProgressBar::with_draw_target(Some(length), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    bar.set_prefix(label);
    bar
}

fn update(bar: &ProgressBar, goal: StopRule, elapsed: Duration, progress: Progress, rate: f64) {
    let p99 = progress.p99.map_or_else(
        || "-".to_owned(),
        |p99| format_micros(p99.as_micros() as f64),
    );
    let mut message = format!(
        "{rate:.0} req/s, {}, p99 {p99}",
        counted(progress.errored, "error")
    );
    match goal {
        StopRule::Requests(_) => bar.set_position(progress.done),
        StopRule::Duration { warm_up, .. } => {
            bar.set_position(elapsed.as_millis() as u64);
            if elapsed < warm_up {
                message.insert_str(0, "warming up, ");
            } else {
                message = format!("{} done, {message}", progress.done);
            }
        }
    }
    bar.set_message(message);
}
