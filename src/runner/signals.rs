//! SIGINT (Ctrl-C), SIGTERM and SIGHUP all stop a load test the same way: sending stops, requests
//! in flight get the drain period, the report is printed and every file written, and the exit
//! status is 128 + the signal's number. One thread watches them for the whole process, from
//! [`install`] on, so a signal that arrives between cells or during a pause is not lost.
//!
//! Signals that arrive within [`ONE_REQUEST`] of the first are the same request to stop: `timeout`
//! signals the process and then its group, and a terminal signals every process of the
//! foreground group, so one stop often arrives as two signals. A signal after that window quits
//! at once, whatever the program is doing (running, draining, writing the exports, lingering),
//! removing first the temporary files of exports not yet renamed into place.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use crate::destination;

/// The signals that stop a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// SIGHUP: the terminal went away.
    Hangup,
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM: `kill`, a container stopping.
    Terminate,
}

impl Signal {
    /// The signal's number on Linux.
    fn number(self) -> u8 {
        match self {
            Signal::Hangup => 1,
            Signal::Interrupt => 2,
            Signal::Terminate => 15,
        }
    }

    /// The exit status of a process it stopped, as shells report it: 129, 130 or 143.
    pub(crate) fn exit_code(self) -> u8 {
        128 + self.number()
    }

    fn kind(self) -> SignalKind {
        SignalKind::from_raw(i32::from(self.number()))
    }
}

/// How long after the first signal further ones are taken as the same request to stop.
pub(crate) const ONE_REQUEST: Duration = Duration::from_secs(1);

/// The first signal, and when it arrived.
type First = Option<(Signal, Instant)>;

static RECEIVED: OnceLock<watch::Sender<First>> = OnceLock::new();

/// Starts watching the signals (once per process; later calls do nothing). Until then they have
/// their default effect, which ends the process.
pub(crate) fn install() -> Result<()> {
    let mut first_call = false;
    RECEIVED.get_or_init(|| {
        first_call = true;
        watch::Sender::new(None)
    });
    if !first_call {
        return Ok(());
    }
    watch(record)
}

/// Makes SIGINT, SIGTERM and SIGHUP do nothing, for the built-in target: it shares the load
/// generator's process group, so a terminal's Ctrl-C and `timeout`'s group signal reach it too,
/// but it must serve the requests in flight until the generator, after its report, stops it.
pub(crate) fn ignore() -> Result<()> {
    watch(|_| ())
}

/// Starts the thread that hands every signal to `on_signal`, once it watches them.
fn watch(on_signal: fn(Signal)) -> Result<()> {
    let (ready, registered) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("h2load-rs-signals".to_owned())
        .spawn(move || watch_signals(ready, on_signal))
        .context("cannot start the signal thread")?;
    registered
        .recv()
        .context("the signal thread ended before watching")?
}

/// The signal thread: registers the handlers, says so on `ready`, then hands every signal to
/// `on_signal`.
fn watch_signals(ready: std::sync::mpsc::Sender<Result<()>>, on_signal: fn(Signal)) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = ready.send(Err(error).context("cannot start the signal thread's runtime"));
            return;
        }
    };
    runtime.block_on(async move {
        let streams = signal(Signal::Hangup.kind()).and_then(|hangup| {
            Ok((
                hangup,
                signal(Signal::Interrupt.kind())?,
                signal(Signal::Terminate.kind())?,
            ))
        });
        let (mut hangup, mut interrupt, mut terminate) = match streams {
            Ok(streams) => streams,
            Err(error) => {
                let _ = ready.send(Err(error).context("cannot watch SIGINT, SIGTERM and SIGHUP"));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        loop {
            let which = tokio::select! {
                _ = hangup.recv() => Signal::Hangup,
                _ = interrupt.recv() => Signal::Interrupt,
                _ = terminate.recv() => Signal::Terminate,
            };
            on_signal(which);
        }
    });
}

/// Takes the first signal as the request to stop, those within [`ONE_REQUEST`] of it as the same
/// request, and a later one as the order to quit now: the process exits with the first signal's
/// status, without what is not yet printed or written.
fn record(which: Signal) {
    let Some(sender) = RECEIVED.get() else {
        return;
    };
    let now = Instant::now();
    let mut quit = None;
    sender.send_if_modified(|first| match *first {
        None => {
            *first = Some((which, now));
            true
        }
        Some((signal, at)) => {
            if now.duration_since(at) >= ONE_REQUEST {
                quit = Some(signal);
            }
            false
        }
    });
    if let Some(first) = quit {
        errln!("h2load-rs: signalled again: quitting at once");
        // Held to the exit: no export starts a temporary file after the removals.
        let _removed = destination::remove_unfinished();
        std::process::exit(i32::from(first.exit_code()));
    }
}

/// The first signal received since [`install`], if any.
pub(crate) fn received() -> Option<Signal> {
    RECEIVED
        .get()
        .and_then(|sender| sender.borrow().map(|(signal, _)| signal))
}

/// Resolves once a signal has asked to stop (at once if one already has); never without
/// [`install`].
pub(crate) async fn requested() {
    let Some(sender) = RECEIVED.get() else {
        return std::future::pending().await;
    };
    let mut receiver = sender.subscribe();
    if receiver.wait_for(Option::is_some).await.is_err() {
        // The sender lives in a static: it is never dropped.
        std::future::pending().await
    }
}
