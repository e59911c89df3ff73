//! `cargo bench`: each engine against the built-in target, as requests per second (criterion's
//! throughput) and allocations per request (printed). The target runs as a separate process, so
//! the counting allocator below sees only the client.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use h2load_rs::testkit::runner;
use h2load_rs::testkit::{first_plan, RunPlan};

/// Counts every allocation (and reallocation) made in this process.
struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; only a counter is added.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The built-in target in its own process; killed when dropped.
struct Target {
    child: Child,
    url: String,
}

impl Target {
    fn start() -> Target {
        let mut child = Command::new(env!("CARGO_BIN_EXE_h2load-rs"))
            .args(["serve", "--port", "0", "--threads", "1"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the built-in target starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("the target prints its address");
        let url = line
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .expect("an http:// address")
            .to_owned();
        Target { child, url }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn plan_for(flags: &[&str], requests: u64, url: &str) -> Arc<RunPlan> {
    let requests = requests.to_string();
    let args = ["h2load-rs", "-n", &requests]
        .into_iter()
        .chain(flags.iter().copied())
        .chain([url]);
    Arc::new(first_plan(args).expect("bench plan builds"))
}

/// Allocations per request beyond a run's fixed setup: the difference between two run sizes.
fn allocations_per_request(flags: &[&str], url: &str) -> f64 {
    let count = |requests| {
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        runner::run(plan_for(flags, requests, url), Default::default()).expect("bench run");
        ALLOCATIONS.load(Ordering::Relaxed) - before
    };
    let (small, large) = (2_000, 22_000);
    (count(large) as f64 - count(small) as f64) / (large - small) as f64
}

fn engines(c: &mut Criterion) {
    const REQUESTS: u64 = 5_000;
    let target = Target::start();
    let ping = format!("{}/ping", target.url);
    // The same runs with every kind of response check: they must allocate nothing more.
    const CHECKS: [&str; 6] = [
        "--expect-status",
        "200",
        "--expect-header",
        "content-length: 4",
        "--expect-body-contains",
        "pong",
    ];
    let h1_checked = [&["--h1", "-c", "4", "-m", "8"][..], &CHECKS].concat();
    let h2_checked = [&["--proto", "h2c", "-c", "4", "-m", "16"][..], &CHECKS].concat();
    // Templated requests: rendered per request into reused buffers, numbered by a shared counter.
    let templated = format!("{}/ping?k={{seq}}&r={{rand:1000}}", target.url);
    let uuid = ["-H", "x-id: {uuid}"];
    let cases: [(&str, &[&str], &str); 7] = [
        ("h1 keep-alive -c 4", &["--h1", "-c", "4"], &ping),
        (
            "h1 pipelined -c 4 -m 8",
            &["--h1", "-c", "4", "-m", "8"],
            &ping,
        ),
        (
            "h2c -c 4 -m 16",
            &["--proto", "h2c", "-c", "4", "-m", "16"],
            &ping,
        ),
        ("h1 pipelined -c 4 -m 8, checks", &h1_checked, &ping),
        ("h2c -c 4 -m 16, checks", &h2_checked, &ping),
        (
            "h1 templated -c 4",
            &["--h1", "-c", "4", uuid[0], uuid[1]],
            &templated,
        ),
        (
            "h2c templated -c 4 -m 16",
            &["--proto", "h2c", "-c", "4", "-m", "16", uuid[0], uuid[1]],
            &templated,
        ),
    ];
    let mut group = c.benchmark_group("engines");
    group.throughput(Throughput::Elements(REQUESTS));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for (name, flags, url) in cases {
        println!(
            "{name}: {:.2} allocations per request",
            allocations_per_request(flags, url)
        );
        let plan = plan_for(flags, REQUESTS, url);
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let started = Instant::now();
                for _ in 0..iterations {
                    runner::run(plan.clone(), Default::default()).expect("bench run");
                }
                started.elapsed()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, engines);
criterion_main!(benches);
