//! Helpers shared by the integration tests: one built-in target for the whole test binary, bounded
//! runs of the h2load-rs binary (and of peer tools), and parsing of h2load-style text reports.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use h2load_rs::testkit::server::{spawn_background, ServeOptions};

/// Longest any single command in a test may run before it is killed and the test fails.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// The address of the test binary's built-in target (started once, shared by every module's tests).
pub fn target() -> SocketAddr {
    static TARGET: OnceLock<SocketAddr> = OnceLock::new();
    *TARGET.get_or_init(|| {
        spawn_background(2, ServeOptions::default()).expect("built-in target starts")
    })
}

/// A URL on the shared built-in target.
pub fn url(path: &str) -> String {
    format!("http://{}{path}", target())
}

/// `h2load-rs serve --port 0` in a process of its own, started behind `wrapper` (a command such
/// as `nice -n -20 taskset -c 1` that then runs it; empty for none), killed when dropped.
pub struct TargetProcess {
    child: std::process::Child,
    /// Its base URL, `http://127.0.0.1:PORT` (`https://` with `--tls`), as it printed it.
    pub base: String,
}

impl TargetProcess {
    /// Starts it with `flags` and waits until it says where it listens.
    pub fn start(wrapper: &[&str], flags: &[&str]) -> TargetProcess {
        let bin = env!("CARGO_BIN_EXE_h2load-rs");
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(bin);
                command
            }
            None => Command::new(bin),
        };
        let mut child = command
            .args(["serve", "--port", "0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {wrapper:?} serve: {error}"));
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("piped stdout")),
            &mut line,
        )
        .expect("the target prints its address");
        let base = line
            .split_whitespace()
            .find(|word| word.starts_with("http://") || word.starts_with("https://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        TargetProcess { child, base }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        let authority = self.base.split("://").nth(1).expect("a scheme");
        authority
            .parse()
            .unwrap_or_else(|_| panic!("no address in {}", self.base))
    }

    /// Kills it now (as a server dying mid-run would).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TargetProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What a finished command produced.
#[derive(Debug)]
pub struct Output {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Wall-clock time the command took.
    pub wall: Duration,
}

/// Runs a command to completion, failing the test if it outlives [`COMMAND_LIMIT`].
pub fn run_command(program: &str, args: &[&str]) -> Output {
    run_command_within(program, args, COMMAND_LIMIT)
}

/// Runs a command to completion, failing the test if it outlives `limit` (for the few commands,
/// such as a capacity search, that are meant to take longer than [`COMMAND_LIMIT`]).
pub fn run_command_within(program: &str, args: &[&str], limit: Duration) -> Output {
    run_command_with_env(program, args, &[], limit)
}

/// Like [`run_command_within`], with environment variables set (`Some`) or removed (`None`).
pub fn run_command_with_env(
    program: &str,
    args: &[&str],
    env: &[(&str, Option<&str>)],
    limit: Duration,
) -> Output {
    let started = Instant::now();
    let mut command = Command::new(program);
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {program}: {error}"));
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let output = match receiver.recv_timeout(limit) {
        Ok(output) => output.expect("waiting for the child works"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("{program} {args:?} did not finish within {limit:?}");
        }
    };
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        wall: started.elapsed(),
    }
}

/// Runs h2load-rs with `args` and checks that it is a usage error: status 2 and one line on
/// stderr that contains `says` (an empty `says` checks only the line count); returns the output.
pub fn assert_usage_error(args: &[&str], says: &str) -> Output {
    let output = run_command(env!("CARGO_BIN_EXE_h2load-rs"), args);
    assert_eq!(output.code, 2, "{args:?}: {}", output.stderr);
    assert_eq!(
        output.stderr.lines().count(),
        1,
        "{args:?}: {}",
        output.stderr
    );
    assert!(output.stderr.contains(says), "{args:?}: {}", output.stderr);
    output
}

/// A run of h2load-rs with its JSON report.
#[derive(Debug)]
pub struct Run {
    /// The process's output.
    pub output: Output,
    /// The `--json` document (Null if none was written).
    pub json: serde_json::Value,
}

impl Run {
    /// The first cell of the JSON report.
    pub fn cell(&self) -> &serde_json::Value {
        &self.json["cells"][0]
    }

    /// A number from the JSON report: `requests/succeeded` is looked up in the first cell, a path
    /// starting with `/` from the document's root.
    pub fn num(&self, path: &str) -> f64 {
        let pointer = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/cells/0/{path}")
        };
        self.json
            .pointer(&pointer)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or_else(|| {
                panic!(
                    "JSON has no number at {pointer}:\n{}\n{}",
                    self.output.stdout, self.output.stderr
                )
            })
    }

    /// An integer from the JSON report.
    pub fn int(&self, path: &str) -> u64 {
        self.num(path) as u64
    }
}

/// Runs h2load-rs with `args` plus `--json`, and parses the JSON it wrote.
pub fn h2load_rs(args: &[&str]) -> Run {
    h2load_rs_with_env(&[], args)
}

/// Like [`h2load_rs`], with environment variables set (`Some`) or removed (`None`).
pub fn h2load_rs_with_env(env: &[(&str, Option<&str>)], args: &[&str]) -> Run {
    h2load_rs_within(env, args, COMMAND_LIMIT)
}

/// Like [`h2load_rs_with_env`], failing only if the run outlives `limit` (for the few runs whose
/// length is their share of a loaded machine's CPU).
pub fn h2load_rs_within(env: &[(&str, Option<&str>)], args: &[&str], limit: Duration) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let json_path = dir.path().join("report.json");
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--json", json_path.to_str().expect("utf-8 temp path")]);
    let output = run_command_with_env(env!("CARGO_BIN_EXE_h2load-rs"), &full, env, limit);
    assert!(
        !output.stderr.contains("panicked"),
        "h2load-rs panicked:\n{}",
        output.stderr
    );
    let json = std::fs::read(&json_path)
        .map(|bytes| serde_json::from_slice(&bytes).expect("the JSON report parses"))
        .unwrap_or(serde_json::Value::Null);
    Run { output, json }
}

/// Counters parsed from an h2load-style text report (h2load's own or ours).
pub fn text_counts(report: &str) -> HashMap<String, u64> {
    let mut counts = HashMap::new();
    for line in report.lines() {
        if let Some(rest) = line.strip_prefix("requests: ") {
            for item in rest.split(", ") {
                let (value, name) = item.split_once(' ').expect("'N name' items");
                counts.insert(name.to_owned(), value.parse().expect("a count"));
            }
        } else if let Some(rest) = line.strip_prefix("status codes: ") {
            for item in rest.split(", ") {
                let (value, name) = item.split_once(' ').expect("'N class' items");
                counts.insert(name.to_owned(), value.parse().expect("a count"));
            }
        } else if let Some(rest) = line.strip_prefix("traffic: ") {
            // "X (N) total, X (N) headers (space savings P%), X (N) data"
            for (name, item) in ["total", "headers", "data"]
                .into_iter()
                .zip(rest.split(", "))
            {
                let number = item
                    .split('(')
                    .nth(1)
                    .and_then(|s| s.split(')').next())
                    .expect("(N)");
                counts.insert(
                    format!("{name}_bytes"),
                    number.parse().expect("a byte count"),
                );
            }
        }
    }
    counts
}

/// Checks that the text report's counts (requests, status classes, bytes) are the JSON's.
pub fn assert_text_matches_json(run: &Run, name: &str) {
    let text = text_counts(&run.output.stdout);
    for (label, pointer) in [
        ("total", "requests/total"),
        ("started", "requests/started"),
        ("done", "requests/done"),
        ("succeeded", "requests/succeeded"),
        ("failed", "requests/failed"),
        ("errored", "requests/errored"),
        ("timeout", "requests/timeout"),
        ("2xx", "status_codes/2xx"),
        ("4xx", "status_codes/4xx"),
        ("5xx", "status_codes/5xx"),
        ("total_bytes", "traffic/total_bytes"),
        ("headers_bytes", "traffic/header_bytes"),
        ("data_bytes", "traffic/data_bytes"),
    ] {
        assert_eq!(
            text.get(label).copied(),
            Some(run.int(pointer)),
            "{name}: {label}"
        );
    }
}

/// Checks a run that sent `n` requests, every one started, done and answered 2xx.
pub fn assert_clean(run: &Run, name: &str, n: u64) {
    assert_eq!(run.output.code, 0, "{name}: {}", run.output.stderr);
    for (field, expected) in [
        ("requests/total", n),
        ("requests/started", n),
        ("requests/done", n),
        ("requests/succeeded", n),
        ("requests/failed", 0),
        ("requests/errored", 0),
        ("status_codes/2xx", n),
    ] {
        assert_eq!(
            run.int(field),
            expected,
            "{name}: {field}\n{}",
            run.output.stdout
        );
    }
}

/// Checks that the paced run `run` kept its schedule of `scheduled` send times exactly: each one
/// started a request or is counted missed, and every request started was done.
pub fn assert_schedule_kept(run: &Run, name: &str, scheduled: u64) {
    assert_eq!(run.output.code, 0, "{name}: {}", run.output.stderr);
    let (started, missed) = (run.int("requests/started"), run.int("rate/missed"));
    assert_eq!(run.int("rate/scheduled"), scheduled, "{name}");
    assert_eq!(
        started + missed,
        scheduled,
        "{name}: {started} started + {missed} missed"
    );
    assert_eq!(run.int("requests/done"), started, "{name}: done");
    if missed > 0 {
        let says = format!("missed: {missed} of the schedule's {scheduled} send times");
        assert!(
            run.output.stdout.contains(&says),
            "{name}: {}",
            run.output.stdout
        );
    }
}

/// How busy this machine is at the moment, measured at the start of a timing test: how late it
/// wakes a sleeping thread, and what share of a core a thread that wants one gets. On a busy
/// machine (other builds and tests on the same cores) every wake-up of the client, the target and
/// the test itself can be that late, and a CPU-bound client or target gets only that share of the
/// CPU time it needs: with two busy loops beside the test on 2 cores, 1 ms sleeps still wake within
/// 0.6 ms while each thread gets half a core, so rates and command lengths follow the share, not
/// the lateness. A tolerance may widen by either, never by more than the cap that keeps the test
/// failing on the value it was written to catch. Failure messages show both (`{noise}`).
#[derive(Debug, Clone)]
pub struct Noise {
    /// How late each of [`NOISE_SAMPLES`] sleeps of 1 ms woke, sorted.
    late: Vec<Duration>,
    /// The CPU time each of [`SPINNERS`] threads spinning for [`SPIN`] got, over [`SPIN`]: 1.0 on
    /// an idle machine.
    cpu_share: f64,
}

/// Sleeps measured by [`timer_noise`].
const NOISE_SAMPLES: usize = 200;
/// Threads that spin at once to measure the CPU share: one for the client and one for the target,
/// as in most timing tests (the share two threads get is what each of them can count on).
const SPINNERS: usize = 2;
/// How long each spinner spins: many scheduler time slices, so the share is an average.
const SPIN: Duration = Duration::from_millis(200);

/// The time a hypervisor has run something else on this machine's CPUs since it booted: the
/// steal column of `/proc/stat`'s `cpu` line (all CPUs, in USER_HZ ticks of 10 ms). The guest's
/// scheduler cannot see it, nor can timer noise measured before a run: a client or a target on
/// a CPU stolen for 10 ms stalls for 10 ms. Zero where the kernel does not count it.
#[allow(dead_code)] // by tests/truth only
pub fn stolen_time() -> Duration {
    let ticks: u64 = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|stat| stat.lines().next()?.split_whitespace().nth(8)?.parse().ok())
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Measures the machine's noise now ([`Noise`]): how late 200 sleeps of 1 ms wake, then the CPU
/// share of [`SPINNERS`] threads spinning for [`SPIN`].
pub fn timer_noise() -> Noise {
    const SLEEP: Duration = Duration::from_millis(1);
    let mut late: Vec<Duration> = (0..NOISE_SAMPLES)
        .map(|_| {
            let started = Instant::now();
            std::thread::sleep(SLEEP);
            started.elapsed().saturating_sub(SLEEP)
        })
        .collect();
    late.sort_unstable();
    let spinners: Vec<_> = (0..SPINNERS).map(|_| std::thread::spawn(spin)).collect();
    let shares: Vec<f64> = spinners
        .into_iter()
        .map(|spinner| spinner.join().expect("a spinner does not panic"))
        .collect();
    let cpu_share = shares.iter().sum::<f64>() / shares.len() as f64;
    Noise { late, cpu_share }
}

/// Spins for [`SPIN`] of wall time and returns the share of it this thread was on a CPU.
fn spin() -> f64 {
    let started = Instant::now();
    let before = thread_cpu_time();
    while started.elapsed() < SPIN {
        std::hint::spin_loop();
    }
    let wall = started.elapsed();
    (thread_cpu_time() - before).as_secs_f64() / wall.as_secs_f64()
}

/// The CPU time this thread has had: the first field of Linux's `/proc/thread-self/schedstat`.
fn thread_cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("/proc/thread-self/schedstat is readable (Linux)");
    let nanos = stat
        .split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .unwrap_or_else(|| panic!("schedstat starts with the CPU time in ns: {stat:?}"));
    Duration::from_nanos(nanos)
}

impl Noise {
    /// The median lateness measured.
    #[allow(dead_code)] // by tests/truth only
    pub fn p50(&self) -> Duration {
        self.late[NOISE_SAMPLES / 2]
    }

    /// The 99th percentile of the lateness measured.
    pub fn p99(&self) -> Duration {
        self.late[NOISE_SAMPLES * 99 / 100 - 1]
    }

    /// The latest of the sleeps measured, at most `cap`: what one rare wake-up may take.
    #[allow(dead_code)] // by tests/truth only
    pub fn latest_wake(&self, cap: Duration) -> Duration {
        self.late[NOISE_SAMPLES - 1].min(cap)
    }

    /// What a tolerance may widen by: the 99th percentile of the lateness, at most `cap`.
    pub fn widening(&self, cap: Duration) -> Duration {
        self.p99().min(cap)
    }

    /// How much slower than on an idle machine CPU-bound work runs now: one over the CPU share,
    /// at least 1 and at most `cap`. A rate floor divides by it, a time limit multiplies by it.
    pub fn slowdown(&self, cap: f64) -> f64 {
        (1.0 / self.cpu_share.max(f64::MIN_POSITIVE)).clamp(1.0, cap)
    }

    /// The worse of two measurements, each figure the worse one: for a test whose run lasts
    /// long enough for the machine's load to change, noise measured before and after it.
    #[allow(dead_code)] // by tests/it only
    pub fn worse(mut self, other: Noise) -> Noise {
        for (mine, theirs) in self.late.iter_mut().zip(other.late) {
            *mine = (*mine).max(theirs);
        }
        self.cpu_share = self.cpu_share.min(other.cpu_share);
        self
    }

    /// `limit` stretched by [`Noise::slowdown`] (at most `cap` times): a command's time limit.
    pub fn stretch(&self, limit: Duration, cap: f64) -> Duration {
        limit.mul_f64(self.slowdown(cap))
    }
}

impl std::fmt::Display for Noise {
    /// For failure messages: what was measured.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "timer noise: 1 ms sleeps woke p50 {:?} / p99 {:?} / max {:?} late; CPU share {:.2} \
             of a core for each of {SPINNERS} spinning threads",
            self.late[NOISE_SAMPLES / 2],
            self.p99(),
            self.late[NOISE_SAMPLES - 1],
            self.cpu_share,
        )
    }
}

/// The scheduled send times of a `--log-file` (its 9th column, µs since the Unix epoch), sorted.
pub fn scheduled_send_times(log: &std::path::Path) -> Vec<i64> {
    let mut times: Vec<i64> = std::fs::read_to_string(log)
        .expect("the request log is written")
        .lines()
        .map(|line| {
            let column = line.split('\t').nth(8).expect("a 9th column");
            column.parse().expect("a number of µs")
        })
        .collect();
    times.sort_unstable();
    times
}

/// How far send times are from a Poisson process whose rate may drift slowly (a ramp, the steps
/// of a search): for exponential gaps of one rate, a gap over the sum of it and the next,
/// g1 / (g1 + g2), is uniform on (0, 1) whatever the rate, so disjoint pairs of neighbouring
/// gaps give a Kolmogorov–Smirnov distance against the uniform without knowing the rate curve.
/// Returns (distance, its 1% critical value for that many pairs); evenly spaced times are about
/// 0.5 away.
pub fn poisson_pair_distance(times: &[i64]) -> (f64, f64) {
    let gaps: Vec<f64> = times
        .windows(2)
        .map(|pair| (pair[1] - pair[0]) as f64)
        .collect();
    let mut shares: Vec<f64> = gaps
        .chunks_exact(2)
        .filter(|pair| pair[0] + pair[1] > 0.0)
        .map(|pair| pair[0] / (pair[0] + pair[1]))
        .collect();
    shares.sort_by(f64::total_cmp);
    let n = shares.len() as f64;
    let distance = shares
        .iter()
        .enumerate()
        .map(|(i, share)| {
            (share - i as f64 / n)
                .abs()
                .max(((i + 1) as f64 / n - share).abs())
        })
        .fold(0.0, f64::max);
    (distance, 1.628 / n.sqrt())
}

/// The comparison table of a text report, read back whole: the text stacks it into several
/// tables within 100 columns (each led by `#` and `protocol`), which this joins again. Each row
/// maps a column's title to its text; columns are right-aligned, so a cell ends where its title
/// ends (an empty cell reads as "").
#[allow(dead_code)] // by tests/it only
pub fn comparison_rows(stdout: &str) -> Vec<HashMap<String, String>> {
    let mut lines = stdout
        .lines()
        .skip_while(|line| !line.starts_with("comparison of "))
        .skip(1)
        .peekable();
    let mut rows: Vec<HashMap<String, String>> = Vec::new();
    while lines.peek().is_some_and(|line| line.starts_with('#')) {
        let titles = lines.next().unwrap();
        let mut edges = Vec::new();
        let mut at = 0;
        for name in titles
            .trim()
            .split("  ")
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            let start = titles[at..].find(name).unwrap() + at;
            edges.push((name.to_owned(), start + name.len()));
            at = start + name.len();
        }
        let mut index = 0;
        // A row starts with its cell's number; a legend line may follow the last table.
        let row = |line: &&str| line.trim_start().starts_with(|c: char| c.is_ascii_digit());
        while let Some(line) = lines.next_if(row) {
            if rows.len() <= index {
                rows.push(HashMap::new());
            }
            // By characters: an interval's dash is one column but three bytes.
            let chars: Vec<char> = line.chars().collect();
            let mut start = 0;
            for (name, end) in &edges {
                let cell: String = chars[start.min(chars.len())..(*end).min(chars.len())]
                    .iter()
                    .collect();
                rows[index].insert(name.clone(), cell.trim().to_owned());
                start = *end;
            }
            index += 1;
        }
        // The blank line between two tables.
        lines.next_if(|line| line.trim().is_empty());
    }
    rows
}

/// Fails the test, with how to get it, when `tool` is not on the PATH.
pub fn require(tool: &str) {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found,
        "{tool} is not installed: run tests/setup.sh (the README's test command does)"
    );
}

#[allow(dead_code)] // by tests/it only
/// The fields of the report's `finished in` line, split at its commas.
pub fn finished_fields(stdout: &str) -> Vec<String> {
    let line = stdout
        .lines()
        .find(|line| line.starts_with("finished in "))
        .unwrap_or_else(|| panic!("no finished line in:\n{stdout}"));
    line["finished in ".len()..]
        .split(", ")
        .map(str::to_owned)
        .collect()
}

/// `2.62 Gbit/s` (or `327.50 MB/s`) read back in units of `unit` (`bit/s`, `B/s`) a second,
/// with the decimal prefixes.
pub fn decimal_figure(text: &str, unit: &str) -> f64 {
    let (number, rest) = text
        .split_once(' ')
        .unwrap_or_else(|| panic!("no 'N unit' in {text:?}"));
    let prefix = rest
        .strip_suffix(unit)
        .unwrap_or_else(|| panic!("{text:?} is not in {unit}"));
    let scale = match prefix {
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        other => panic!("{other:?} is not a decimal prefix ({text:?})"),
    };
    number.parse::<f64>().unwrap_or_else(|_| panic!("{text:?}")) * scale
}

/// A throughput as the report prints it, `2.62 Gbit/s (327.50 MB/s)`, in bytes a second: its
/// bits and bytes checked to be the same figure within their rounding (3 significant digits at
/// least: 0.5%).
pub fn throughput(text: &str) -> f64 {
    let (bits, bytes) = text
        .strip_suffix(')')
        .and_then(|text| text.split_once(" ("))
        .unwrap_or_else(|| panic!("no 'bits (bytes)' in {text:?}"));
    let (bits, bytes) = (decimal_figure(bits, "bit/s"), decimal_figure(bytes, "B/s"));
    assert!(
        (bits / 8.0 / bytes - 1.0).abs() < 0.005,
        "{text:?}: the bits are not 8 times the bytes"
    );
    bytes
}
