//! SIGINT (Ctrl-C), SIGTERM and SIGHUP all stop a load test the same way: sending stops, requests
//! in flight get the drain period, the report is printed and every file written, and the exit
//! status is 128 + the signal's number. One thread watches them for the whole process, from
//! [`install`] on, so a signal that arrives between cells or during a pause is not lost.

use std::sync::OnceLock;

use anyhow::{Context, Result};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// The signals that stop a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
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
    pub fn exit_code(self) -> u8 {
        128 + self.number()
    }

    fn kind(self) -> SignalKind {
        SignalKind::from_raw(i32::from(self.number()))
    }
}

/// What has arrived so far.
#[derive(Debug, Clone, Copy, Default)]
struct Received {
    count: u32,
    first: Option<Signal>,
}

static RECEIVED: OnceLock<watch::Sender<Received>> = OnceLock::new();

/// Starts watching the signals (once per process; later calls do nothing). Until then they have
/// their default effect, which ends the process.
pub fn install() -> Result<()> {
    let mut first_call = false;
    RECEIVED.get_or_init(|| {
        first_call = true;
        watch::Sender::new(Received::default())
    });
    if !first_call {
        return Ok(());
    }
    let (ready, registered) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("h2load-rs-signals".to_owned())
        .spawn(move || watch_signals(ready))
        .context("cannot start the signal thread")?;
    registered
        .recv()
        .context("the signal thread ended before watching")?
}

/// The signal thread: registers the handlers, says so on `ready`, then records every signal.
fn watch_signals(ready: std::sync::mpsc::Sender<Result<()>>) {
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
            record(which);
        }
    });
}

fn record(which: Signal) {
    if let Some(sender) = RECEIVED.get() {
        sender.send_modify(|received| {
            received.count += 1;
            received.first.get_or_insert(which);
        });
    }
}

/// The first signal received since [`install`], if any.
pub fn received() -> Option<Signal> {
    RECEIVED.get().and_then(|sender| sender.borrow().first)
}

/// How many signals have arrived since [`install`].
pub fn count() -> u32 {
    RECEIVED.get().map_or(0, |sender| sender.borrow().count)
}

/// Resolves once more than `seen` signals have arrived, with how many have; never without
/// [`install`].
pub async fn more_than(seen: u32) -> u32 {
    let Some(sender) = RECEIVED.get() else {
        return std::future::pending().await;
    };
    let mut receiver = sender.subscribe();
    let count = receiver
        .wait_for(|received| received.count > seen)
        .await
        .map(|received| received.count);
    match count {
        Ok(count) => count,
        // The sender lives in a static: it is never dropped.
        Err(_) => std::future::pending().await,
    }
}
