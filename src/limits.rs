//! Upper bounds on what the command line and its files may ask for. Each is far beyond any real
//! run, so hitting one means a typo or hostile input: it is a usage error (exit 2) before anything
//! is sent, never an overflow, a panic or a process that eats the machine's memory. The table
//! "What a run may ask for" in docs/reference.md lists them.

use std::time::Duration;

/// `-c`: connections per cell (each needs a file descriptor; Linux's default `nr_open` is 2^20).
pub(crate) const MAX_CLIENTS: u64 = 1_000_000;

/// `-t`: OS threads.
pub(crate) const MAX_THREADS: u64 = 4096;

/// `-m`: requests in flight per connection, also the streams `--h2-multiplex` puts on one
/// connection (`-c × -m`).
pub(crate) const MAX_STREAMS: u64 = 1_000_000;

/// `-n`: requests in a cell, whether given as a total or as `Kx` (and after `--scale`).
pub(crate) const MAX_REQUESTS: u64 = 1_000_000_000_000;

/// `--rate` and `--rps`: the largest rate, requests per second (after `--rps` × connections).
pub(crate) const MAX_RATE: f64 = 100_000_000.0;

/// `--rate` and `--rps`: the smallest rate; below it the schedule's period would overflow.
pub(crate) const MIN_RATE: f64 = 0.001;

/// `--rounds`: the most rounds of a sweep (a t-interval gains little past a few dozen).
pub(crate) const MAX_ROUNDS: u64 = 100;

/// `--scale`: the largest factor.
pub(crate) const MAX_SCALE: f64 = 1000.0;

/// `--scale`: the smallest factor.
pub(crate) const MIN_SCALE: f64 = 0.000_001;

// Every duration flag's bound, `MAX_DURATION`, is in src/units.rs: `parse_duration` bounds by
// it, and units sits below cli.

/// `--interval`: the shortest timeline interval (each interval keeps its own histograms).
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// `--progress-interval`: the shortest, so the lines stay a log and not a flood.
pub(crate) const MIN_PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// `-d`: the request body file, read into memory once.
pub(crate) const MAX_BODY_FILE: u64 = 1 << 30;

/// `-i FILE`: a list of URLs, held in memory at about 150 bytes a URL once, plus 16 bytes a URL
/// per thread (measured: 6.2 million short URLs, 64 MiB, take 0.94 GB at `-t 1`).
pub(crate) const MAX_URL_FILE: u64 = 64 << 20;

/// `-i FILE`: what a URL list may cost in memory, estimated before anything is allocated for it
/// from its lines and bytes ([`URL_COST`], [`URL_COST_PER_THREAD`], twice the URL's length): a
/// file under [`MAX_URL_FILE`] of one-character lines would otherwise need 5 GB.
pub(crate) const MAX_URL_LIST_MEMORY: u64 = 1 << 30;

/// The memory a URL costs the plan besides its text (measured: 6.2 million short URLs took
/// 0.94 GB at `-t 1`): its strings in the list and the plan (held twice), its template slot
/// and its per-URL row.
pub(crate) const URL_COST: u64 = 150;

/// What a URL costs each thread: its per-URL counters.
pub(crate) const URL_COST_PER_THREAD: u64 = 16;

/// `run FILE`: a scenario file.
pub(crate) const MAX_SCENARIO_FILE: u64 = 16 << 20;

/// `--cacert`, `--cert`, `--key`, `serve --tls-cert/--tls-key`: PEM files.
pub(crate) const MAX_PEM_FILE: u64 = 16 << 20;

/// `merge FILE...`: each JSON report (a day at 1 s intervals is well under 100 MiB).
pub(crate) const MAX_REPORT_FILE: u64 = 256 << 20;

/// `--step-duration`: the shortest step that still settles and measures something, and the
/// longest that lets a search of about fifteen steps end the same day.
pub(crate) const MIN_STEP: Duration = Duration::from_millis(300);
/// The longest `--step-duration`.
pub(crate) const MAX_STEP: Duration = Duration::from_secs(600);
