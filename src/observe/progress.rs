//! The live progress on stderr, from what the workers publish. On a terminal, a bar: done/total
//! or elapsed/duration, req/s over the last second, errors and p99 so far, redrawn in place.
//! Elsewhere (CI, `kubectl logs`), where a redrawn bar is noise, a line every
//! [`LINE_EVERY`] as h2load's `progress: 10% done` and k6's status line: the cell, how far it is,
//! the requests so far, the rate since the last line and the errors.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::observe::live::{Live, Progress, PUBLISH_EVERY};
use crate::plan::StopRule;
use crate::units::{counted, format_micros, grouped};

/// How often a progress line is printed where stderr is not a terminal: often enough that a
/// CI log shows a long run alive, seldom enough that a 10-minute run is 60 lines.
pub(crate) const LINE_EVERY: Duration = Duration::from_secs(10);

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// A bar redrawn in place (stderr is a terminal).
    Bar,
    /// A line at each multiple of this interval (stderr is a file or a pipe).
    Lines(Duration),
}

/// The progress display being drawn by its own thread until [`Display::finish`].
#[derive(Debug)]
pub(crate) struct Display {
    stop: Sender<()>,
    drawer: JoinHandle<()>,
}

impl Display {
    /// Starts showing the progress of `live` towards `goal` in `style`, labelled `label`.
    pub(crate) fn start(live: Arc<Live>, goal: StopRule, label: String, style: Style) -> Self {
        let (stop, stopped) = mpsc::channel();
        if let Style::Lines(every) = style {
            let drawer = std::thread::spawn(move || {
                let began = Instant::now();
                let mut last = (began, 0);
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    let now = Instant::now();
                    let progress = live.progress();
                    let rate = (progress.done.saturating_sub(last.1)) as f64
                        / (now - last.0).as_secs_f64().max(1e-3);
                    last = (now, progress.done);
                    errln!("{}", line(&label, goal, now - began, progress, rate));
                }
            });
            return Display { stop, drawer };
        }
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

/// `progress: cell 2/6 h2c c=10 m=1: 12.3 s of 30 s, 41,200 requests, 3,400 req/s, 0 errors`;
/// a counted run says `41,200 of 100,000 requests (41%), 12.3 s`; the rate is over the last
/// interval.
fn line(label: &str, goal: StopRule, elapsed: Duration, progress: Progress, rate: f64) -> String {
    let elapsed_s = elapsed.as_secs_f64();
    let done = grouped(progress.done as f64);
    let how_far = match goal {
        StopRule::Requests(total) => format!(
            "{done} of {} requests ({:.0}%), {elapsed_s:.1} s",
            grouped(total as f64),
            100.0 * progress.done as f64 / total.max(1) as f64
        ),
        StopRule::Duration { warm_up, measure } => {
            let phase = if elapsed < warm_up {
                " (warming up)"
            } else {
                ""
            };
            format!(
                "{elapsed_s:.1} s of {}{phase}, {done} requests",
                seconds(warm_up + measure)
            )
        }
    };
    format!(
        "progress: {label}: {how_far}, {} req/s, {}",
        grouped(rate),
        counted(progress.errored, "error")
    )
}

/// `30 s`, `2.5 s`: a planned length as it was most likely given.
fn seconds(length: Duration) -> String {
    let seconds = length.as_secs_f64();
    if seconds.fract() == 0.0 {
        format!("{seconds:.0} s")
    } else {
        format!("{seconds:.1} s")
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(done: u64, errored: u64) -> Progress {
        Progress {
            done,
            errored,
            p99: None,
        }
    }

    #[test]
    fn a_timed_line_says_the_time_of_the_whole_and_the_requests() {
        let goal = StopRule::Duration {
            warm_up: Duration::ZERO,
            measure: Duration::from_secs(30),
        };
        assert_eq!(
            line(
                "cell 2/6 h2c c=10 m=1",
                goal,
                Duration::from_millis(12_340),
                progress(41_200, 0),
                3_400.4
            ),
            "progress: cell 2/6 h2c c=10 m=1: 12.3 s of 30 s, 41,200 requests, 3,400 req/s, 0 errors"
        );
        let warming = StopRule::Duration {
            warm_up: Duration::from_secs(5),
            measure: Duration::from_millis(2_500),
        };
        assert_eq!(
            line(
                "h1 c=1 m=1",
                warming,
                Duration::from_secs(1),
                progress(10, 1),
                10.0
            ),
            "progress: h1 c=1 m=1: 1.0 s of 7.5 s (warming up), 10 requests, 10 req/s, 1 error"
        );
    }

    #[test]
    fn a_counted_line_says_the_share_done() {
        assert_eq!(
            line(
                "h2c c=1 m=1",
                StopRule::Requests(100_000),
                Duration::from_secs(20),
                progress(41_000, 2),
                2_050.0
            ),
            "progress: h2c c=1 m=1: 41,000 of 100,000 requests (41%), 20.0 s, 2,050 req/s, 2 errors"
        );
    }
}
