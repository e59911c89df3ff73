//! [`build`]: one cell's inputs become its [`RunPlan`], each part checked by the file that holds
//! it; here also the stop rule (`-n`, `-D`, scaled) and the response checks.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use super::cells::{
    check_cell_limits, per_client_rate, run_seed, scaled, scaled_stages, stages_plan, CellSpec,
};
use super::grpc::grpc_plan;
use super::inputs::{Inputs, Load, Request, Requests};
use super::negotiate::{check_tls_reuse, choose_negotiation, io_backend, tls_plan};
use super::request::request_template;
use super::route::{self, resolve, resolve_connect_to, Route};
use super::run_plan::{
    Destination, H2Settings, Negotiation, RunPlan, StopRule, TimelineInterval, Timeouts,
    DEFAULT_CONNECT_TIMEOUT, QUIC_IDLE_TIMEOUT,
};
use super::shard::Whole;
use super::target::{parse_target, Scheme};
use super::{objective, DEFAULT_REQUESTS, UNTIL_STABLE_CAP};
use super::{Arrival, ProtoChoice};
use crate::limits::MAX_REQUESTS;
use crate::proto::check::Checks;
use crate::proto::events::EventPlan;
use crate::units::{counted, MAX_DURATION};
use crate::usage_bail;

/// Builds the plan of one cell. `urls` replaces the inputs' URLs (the app may fill in the built-in
/// target, whose CA `trust_test_ca` adds to the trusted roots); `file_urls` (`-i`) come after them.
/// `uring_verdict` says whether io_uring is usable (the engine's probe, which the caller passes:
/// the plan sits below the engine); it is asked only for `--io uring` or `--io auto`.
pub(crate) fn build(
    inputs: &Inputs,
    urls: &[String],
    file_urls: &[String],
    cell: &CellSpec,
    trust_test_ca: bool,
    uring_verdict: &dyn Fn() -> Result<(), String>,
) -> Result<RunPlan> {
    let load = &inputs.load;
    objective::check_slo(&load.slo)?;
    let urls = grpc_url(inputs, urls, cell)?;
    if let Some(url) = urls
        .iter()
        .find(|url| inputs.grpc.method.is_some() && !url.contains("://"))
    {
        let url = crate::error::quoted(&super::target::shown(url)).to_string();
        usage_bail!("URL '{url}' has no scheme (ghz's host:port): write http://{url} for h2c, or https://{url} for TLS");
    }
    let parsed = parse_target(urls, file_urls)?;
    let negotiation = choose_negotiation(inputs, cell.proto, parsed.scheme)?;
    check_cell_limits(cell)?;
    // With --connect-to, --unix-socket or --proxy the URL's host only names the server (Host,
    // SNI; the proxy resolves it): it need not resolve here.
    let route = route::route(
        &inputs.connection,
        &parsed.host,
        parsed.port,
        resolve,
        resolve_connect_to,
    )?;
    if negotiation == Negotiation::Quic && !matches!(route, Route::Direct(_)) {
        usage_bail!("--proto h3 runs over UDP: it cannot go through --unix-socket or --proxy (CONNECT-UDP is not supported)");
    }
    let tls = match parsed.scheme {
        Scheme::Https => Some(tls_plan(
            &inputs.tls,
            negotiation,
            &parsed.host,
            trust_test_ca,
        )?),
        Scheme::Http => None,
    };
    let mut notes = Vec::new();
    let whole_stop = stop_rule(load, cell)?;
    let whole = load.shard.map(|_| Whole {
        clients: cell.clients,
        requests: match whole_stop {
            StopRule::Requests(n) => Some(n),
            _ => None,
        },
        rate_per_s: cell.rate,
    });
    let (stop, clients) = shard_split(load, whole_stop, cell.clients)?;
    let mut clients = to_usize(clients, "-c")?;
    if let StopRule::Requests(n) = stop {
        if n < clients as u64 {
            notes.push(format!(
                "-n {n} is less than -c {clients}: only {} can carry a request, so only {} opened",
                counted(n, "connection"),
                if n == 1 { "it is" } else { "they are" }
            ));
            clients = n as usize;
        }
    }
    let mut threads = to_usize(load.threads, "-t")?;
    if threads > clients {
        notes.push(format!(
            "-t {threads} is more than the {}: using {}",
            counted(clients as u64, "connection"),
            counted(clients as u64, "thread")
        ));
        threads = clients;
    }

    let max_frame_size = u32::try_from(inputs.protocol.max_frame_size)
        .ok()
        .filter(|size| (16_384..=16_777_215).contains(size));
    let Some(max_frame_size) = max_frame_size else {
        usage_bail!("-f/--max-frame-size must be between 16K and 16M-1 (16384..16777215)");
    };
    let Ok(header_table_size) = u32::try_from(inputs.protocol.header_table_size) else {
        usage_bail!("--header-table-size must be below 4G");
    };
    let shard_share = load.shard.map_or(1.0, |shard| 1.0 / shard.count as f64);
    let stages = stages_plan(load, cell)?.map(|stages| stages.scaled(shard_share));
    let rate = match (cell.rate, load.rps) {
        (Some(_), _) if stages.is_some() => None,
        (Some(rate), _) => Some(rate * shard_share),
        (None, Some(per_client)) => Some(per_client_rate(per_client, clients)?),
        (None, None) => None,
    };
    if load.arrival == Arrival::Poisson && rate.is_none() && stages.is_none() && !load.find_max {
        usage_bail!("--arrival poisson spaces paced send times: give it --rate, --rps, --stages or --find-max");
    }
    let destination = Destination {
        urls: parsed.urls,
        route,
        input_file: inputs
            .target
            .input_file
            .as_ref()
            .map(|path| path.display().to_string()),
        authority: parsed.authority,
    };

    let last_seq = match load.requests {
        Some(Requests::Total(total)) => Some(total),
        _ => None,
    };
    let mut grpc_warnings = Vec::new();
    let grpc = grpc_plan(&inputs.grpc, last_seq, &mut grpc_warnings)?;
    if grpc.is_some() {
        if let Some(flag) = [
            (inputs.request.data.is_some(), "-d"),
            (inputs.request.body.is_some(), "--body"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
        {
            usage_bail!("{flag} cannot be given with --grpc: the message comes from --grpc-data or --grpc-binary-file");
        }
        if parsed.paths.len() > 1 {
            usage_bail!(
                "--grpc calls one method on one server: give one URL (its path is not used)"
            );
        }
    }
    let (grpc, body) = grpc.map_or((None, None), |(plan, body)| (Some(plan), Some(body)));
    let request = request_template(
        inputs,
        parsed.paths,
        &destination.authority,
        grpc.as_ref().map(|plan| plan.path.as_str()).zip(body),
    )?;
    check_tls_reuse(inputs, negotiation, &request)?;
    let checks = checks(&inputs.request, grpc.is_some())?;
    // Last: every usage error outranks a kernel that refuses io_uring.
    let io = io_backend(inputs, negotiation, uring_verdict, &mut notes)?;
    Ok(RunPlan {
        request,
        destination,
        negotiation,
        tls,
        stop,
        clients,
        threads,
        max_concurrent: to_usize(cell.streams, "-m")?,
        timeouts: Timeouts {
            connect: Some(
                inputs
                    .connection
                    .connect_timeout
                    .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            ),
            request: inputs.connection.request_timeout,
            connection_active: inputs.connection.active_timeout,
            connection_inactivity: inputs.connection.inactivity_timeout,
            quic_idle: QUIC_IDLE_TIMEOUT,
        },
        max_retries: inputs.connection.max_retries,
        requests_per_connection: inputs
            .connection
            .requests_per_connection
            .or(inputs.connection.no_keepalive.then_some(1)),
        no_keepalive: inputs.connection.no_keepalive,
        h2: H2Settings {
            stream_window: (1u32 << inputs.protocol.window_bits) - 1,
            connection_window: (1u32 << inputs.protocol.connection_window_bits) - 1,
            max_frame_size,
            header_table_size,
        },
        rate,
        stages,
        arrival: load.arrival,
        shard: load.shard,
        whole,
        until_stable: load.until_stable,
        interval: TimelineInterval::choose(load.interval, &stop),
        notes,
        warnings: parsed.warnings.into_iter().chain(grpc_warnings).collect(),
        checks,
        seed: run_seed(load.seed),
        io,
        events: event_plan(&inputs.request, grpc.is_some())?,
        grpc,
    })
}

/// A gRPC cell's URL: the one given, or of an `http://` and an `https://` URL of one service
/// (its cleartext and TLS ports), the one whose scheme the cell's `--proto` speaks, so that
/// `--proto h2,h2c` compares the two.
fn grpc_url<'u>(inputs: &Inputs, urls: &'u [String], cell: &CellSpec) -> Result<&'u [String]> {
    if inputs.grpc.method.is_none() || urls.len() < 2 {
        return Ok(urls);
    }
    let secure = |url: &String| url.to_ascii_lowercase().starts_with("https://");
    let split = match urls {
        [one, other] if secure(one) != secure(other) => Some(if secure(one) {
            (std::slice::from_ref(one), std::slice::from_ref(other))
        } else {
            (std::slice::from_ref(other), std::slice::from_ref(one))
        }),
        _ => None,
    };
    let Some((tls, cleartext)) = split else {
        usage_bail!(
            "--grpc calls one method on one server: give one URL, or its http:// and https:// URLs with --proto h2,h2c"
        );
    };
    match cell.proto {
        Some(ProtoChoice::H2) => Ok(tls),
        Some(ProtoChoice::H2c) => Ok(cleartext),
        _ => usage_bail!(
            "--grpc with an http:// and an https:// URL needs --proto h2, h2c or both, to pick one"
        ),
    }
}

/// How response bodies are read as events: not in a gRPC cell (its body is messages).
fn event_plan(given: &Request, grpc: bool) -> Result<Option<EventPlan>> {
    if given.max_event_size == 0 {
        usage_bail!("--max-event-size must be at least 1 byte");
    }
    Ok(given.events.filter(|_| !grpc).map(|forced| EventPlan {
        forced,
        limit: given.max_event_size,
    }))
}

/// The response checks the `--expect-*` flags ask for.
fn checks(given: &Request, grpc: bool) -> Result<Option<Arc<Checks>>> {
    match Checks::parse(
        grpc,
        &given.expect_status,
        &given.expect_header,
        given.expect_body_contains.as_deref(),
    ) {
        Ok(checks) => Ok(checks.map(Arc::new)),
        Err(problem) => usage_bail!("{problem}"),
    }
}

/// A `-D` that `--scale` shrinks stays at least this long (or as long as given, if shorter), so a
/// scaled cell on a busy machine still measures more than its connection setup.
const MIN_SCALED_DURATION: Duration = Duration::from_secs(1);

/// When the cell stops: `-D` (with its warm-up) or `-n`, scaled, within the limits.
fn stop_rule(load: &Load, cell: &CellSpec) -> Result<StopRule> {
    if load.find_max {
        // The search's steps end the run; the report gives the search's real length.
        return Ok(StopRule::Duration {
            warm_up: Duration::ZERO,
            measure: load.step_duration,
        });
    }
    let scale = load.scale.unwrap_or(1.0);
    if !load.stages.is_empty() {
        // The stages are the measured period; a ramp from 0 is its own warm-up.
        let measure = scaled_stages(load).iter().map(|stage| stage.duration).sum();
        return Ok(StopRule::Duration {
            warm_up: Duration::ZERO,
            measure,
        });
    }
    if let Some(measure) = load.duration {
        let warm_up = load.warm_up_time.unwrap_or_default().mul_f64(scale);
        let floor = if scale < 1.0 {
            measure.min(MIN_SCALED_DURATION)
        } else {
            Duration::ZERO
        };
        let measure = measure
            .mul_f64(scale)
            .max(floor)
            .max(Duration::from_millis(100));
        if measure.max(warm_up) > MAX_DURATION {
            usage_bail!("--scale {scale} makes -D or --warm-up-time longer than 30 days, the longest duration accepted");
        }
        return Ok(StopRule::Duration { warm_up, measure });
    }
    if load.until_stable.is_some() && load.requests.is_none() {
        return Ok(StopRule::Duration {
            warm_up: Duration::ZERO,
            measure: UNTIL_STABLE_CAP,
        });
    }
    // A scaled-down count still gives every connection and stream of the cell a request, so the
    // level's concurrency is not cut back to the count (levels stay apart).
    let concurrency = cell.clients.saturating_mul(cell.streams);
    let scaled_count = |n: u64| {
        let floor = if scale < 1.0 { n.min(concurrency) } else { 0 };
        scaled(n, scale).max(floor)
    };
    let requests = match load.requests {
        None => Some(scaled_count(DEFAULT_REQUESTS)),
        Some(Requests::Total(n)) => Some(scaled_count(n)),
        Some(Requests::PerConcurrency(k)) => k
            .checked_mul(cell.clients)
            .and_then(|n| n.checked_mul(cell.streams)),
    };
    match requests.filter(|&n| n <= MAX_REQUESTS) {
        Some(n) => Ok(StopRule::Requests(n)),
        None => usage_bail!(
            "-n comes to more than {MAX_REQUESTS} (10^12) requests for the cell with -c {} -m {}",
            cell.clients,
            cell.streams
        ),
    }
}

/// `-n` and `-c` split for `--shard` (a timed run's length is every part's), unless the load
/// cannot be split.
fn shard_split(load: &Load, stop: StopRule, clients: u64) -> Result<(StopRule, u64)> {
    let Some(shard) = load.shard else {
        return Ok((stop, clients));
    };
    let requests = match stop {
        StopRule::Requests(n) => Some(n),
        StopRule::Duration { .. } => None,
    };
    if let Some(refusal) = shard.refusal(
        load.find_max,
        load.until_stable.is_some(),
        clients,
        requests,
    ) {
        usage_bail!("{refusal}");
    }
    let stop = match stop {
        StopRule::Requests(n) => StopRule::Requests(shard.part(n)),
        timed => timed,
    };
    Ok((stop, shard.part(clients)))
}

fn to_usize(value: u64, flag: &str) -> Result<usize> {
    match usize::try_from(value) {
        Ok(value) => Ok(value),
        Err(_) => usage_bail!("{flag} {value} is too large"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::uring::probe::check;
    use crate::plan::cells::cells;
    use crate::plan::testing::{plan, usage_message};
    use clap::Parser;

    #[test]
    fn fewer_requests_than_clients_opens_fewer_connections() {
        let plan = plan(&["-n", "3", "-c", "10", "-t", "4", "http://127.0.0.1:1/"]).unwrap();
        assert_eq!((plan.clients, plan.threads), (3, 3));
        assert_eq!(plan.notes.len(), 2);
    }

    /// `--until-stable` ends the run itself: without `-n` or `-D` its cap is a time, not the
    /// default count a fast target finishes before the answer can settle.
    #[test]
    fn until_stable_without_a_count_or_duration_is_capped_by_time() {
        let url = "http://127.0.0.1:1/";
        let stop = |words: &[&str]| plan(words).unwrap().stop;
        assert_eq!(
            stop(&["--until-stable", "5%", url]),
            StopRule::Duration {
                warm_up: Duration::ZERO,
                measure: UNTIL_STABLE_CAP
            }
        );
        assert_eq!(
            stop(&["--until-stable", "5%", "-n", "500", url]),
            StopRule::Requests(500)
        );
        assert_eq!(
            stop(&["--until-stable", "5%", "-D", "3s", url]),
            StopRule::Duration {
                warm_up: Duration::ZERO,
                measure: Duration::from_secs(3)
            }
        );
        assert_eq!(stop(&[url]), StopRule::Requests(DEFAULT_REQUESTS));
    }

    #[test]
    fn bad_input_is_a_usage_error_naming_the_problem() {
        assert!(usage_message(&["ftp://127.0.0.1/"]).contains("unsupported scheme 'ftp'"));
        assert!(usage_message(&["127.0.0.1:8080/ping"]).contains("has no scheme"));
        assert!(usage_message(&["http://127.0.0.1:0/"]).contains("port 0"));
        assert!(usage_message(&["-H", "novalue", "http://127.0.0.1:1/"])
            .contains("expected 'Name: value'"));
        assert!(usage_message(&["-H", "bad name: v", "http://127.0.0.1:1/"])
            .contains("not a valid header name"));
        assert!(
            usage_message(&["-H", ":path: /x", "http://127.0.0.1:1/"]).contains("pseudo-header")
        );
        assert!(usage_message(&["--proto", "h2", "http://127.0.0.1:1/"])
            .contains("needs an https:// URL"));
        assert!(usage_message(&["-f", "1K", "http://127.0.0.1:1/"]).contains("max-frame-size"));
        assert!(usage_message(&["--method", "GE T", "http://127.0.0.1:1/"])
            .contains("not a valid HTTP method"));
    }

    #[test]
    fn scale_shrinks_counts_levels_and_durations() {
        let cli = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "-c",
            "16000",
            "-n",
            "100000",
            "--scale",
            "0.01",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let inputs = crate::app::inputs::from_flags(&cli.load);
        let cells = cells(&inputs, None);
        assert_eq!(cells[0].clients, 160);
        let plan = build(&inputs, &cli.load.urls, &[], &cells[0], false, &check).unwrap();
        assert_eq!(plan.stop, StopRule::Requests(1000));
        let timed = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "-D",
            "30s",
            "--scale",
            "0.1",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let timed_inputs = crate::app::inputs::from_flags(&timed.load);
        let timed_cells = crate::plan::cells(&timed_inputs, None);
        let plan = build(
            &timed_inputs,
            &timed.load.urls,
            &[],
            &timed_cells[0],
            false,
            &check,
        )
        .unwrap();
        assert_eq!(
            plan.stop,
            StopRule::Duration {
                warm_up: Duration::ZERO,
                measure: Duration::from_secs(3)
            }
        );
        let floored = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "-D",
            "30s",
            "--scale",
            "0.01",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let floored_inputs = crate::app::inputs::from_flags(&floored.load);
        let plan = build(
            &floored_inputs,
            &floored.load.urls,
            &[],
            &crate::plan::cells(&floored_inputs, None)[0],
            false,
            &check,
        )
        .unwrap();
        assert_eq!(
            plan.stop,
            StopRule::Duration {
                warm_up: Duration::ZERO,
                measure: MIN_SCALED_DURATION
            },
            "0.3 s is raised to the floor"
        );
    }

    #[test]
    fn limits_hold_after_scale_and_multiplexing() {
        let url = "http://127.0.0.1:1/";
        assert!(usage_message(&["-c", "1000000", "--scale", "2", url])
            .contains("-c 2000000 connections, more than the limit of 1000000"));
        assert!(
            usage_message(&["-c", "1000", "-m", "1001", "--h2-multiplex", url])
                .contains("1001000 streams on one connection")
        );
        assert!(usage_message(&["-n", "1000000000000x", "-c", "2", url])
            .contains("more than 1000000000000 (10^12) requests"));
        assert!(usage_message(&["-n", "1000000000000", "--scale", "10", url]).contains("10^12"));
        assert!(usage_message(&["--rps", "100000000", "-c", "2", url])
            .contains("more than the limit of 100000000 requests/s"));
        assert!(usage_message(&["-D", "720h", "--scale", "2", url]).contains("30 days"));
        let largest = plan(&["-n", "1000000x", "-c", "1000", "-m", "1000", url]).unwrap();
        assert_eq!(largest.stop, StopRule::Requests(1_000_000_000_000));
    }

    #[test]
    fn unix_sockets_and_proxies_refuse_h3_and_each_other() {
        for (argv, says) in [
            (
                &[
                    "--unix-socket",
                    "/s",
                    "--proto",
                    "h2",
                    "--tls-early-data",
                    "https://localhost/",
                ][..],
                "not supported with --unix-socket",
            ),
            (
                &["--unix-socket", "/s", "--proto", "h3", "https://localhost/"][..],
                "--proto h3 runs over UDP",
            ),
            (
                &[
                    "--proxy",
                    "http://127.0.0.1:1",
                    "--proto",
                    "h3",
                    "https://localhost/",
                ],
                "CONNECT-UDP is not supported",
            ),
            (
                &[
                    "--unix-socket",
                    "/s",
                    "--connect-to",
                    "127.0.0.1:1",
                    "http://localhost/",
                ],
                "--unix-socket cannot be combined",
            ),
            (
                &[
                    "--unix-socket",
                    "/s",
                    "--proxy",
                    "http://127.0.0.1:1",
                    "http://localhost/",
                ],
                "--unix-socket cannot be combined",
            ),
        ] {
            let message = usage_message(argv);
            assert!(message.contains(says), "{argv:?}: {message}");
        }
    }
}
