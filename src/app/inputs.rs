//! The parsed flags of a load test turned into the plan's [`Inputs`]: the one place that knows
//! both, so `plan` never sees a clap type. Spellings that only the flags have are resolved here:
//! h2load's `-p` and `--h1` become default protocols, `--no-retry` no retries, curl's `-d @FILE`
//! the file, `--grpc-shape` the call's shape.

use crate::cli::{EventsArg, GrpcShapeArg, LoadArgs, NoTlsProto};
use crate::plan::grpc::CallShape;
use crate::plan::RunPlan;
use crate::plan::{
    Connection, GrpcInputs, Inputs, Load, ProtoChoice, ProtocolInputs, Request, Target, Tls,
};
use crate::proto::events::EventFormat;

/// The plan of the one cell of the command line `words` (the program's name first), made as a
/// run makes a cell's: the flags, their inputs, the cell, with io_uring probed if asked for. The
/// benches, the steering test and the fuzz targets plan with it; words that make a sweep of
/// more than one cell are an error, as they would plan only a part of what they say.
pub fn first_plan<'a>(words: impl IntoIterator<Item = &'a str>) -> anyhow::Result<RunPlan> {
    use clap::Parser as _;
    let cli = crate::cli::Cli::try_parse_from(words)?;
    let inputs = from_flags(&cli.load);
    let cells = crate::plan::cells(&inputs, None);
    let [cell] = cells.as_slice() else {
        anyhow::bail!("the words make {} cells, not one", cells.len());
    };
    crate::plan::build(
        &inputs,
        &inputs.target.urls,
        &[],
        cell,
        false,
        &crate::io::uring::probe::check,
    )
}

/// What the plan of every cell of `args` is made from; the gRPC schema of `--grpc-reflect` is
/// fetched later (`Grpc::reflected`).
pub(crate) fn from_flags(args: &LoadArgs) -> Inputs {
    Inputs {
        target: Target {
            urls: args.urls.clone(),
            input_file: args.input_file.clone(),
            urls_random: args.urls_random,
            target_tls: args.target_tls,
        },
        load: Load {
            requests: args.requests,
            clients: args.clients.clone(),
            threads: args.threads,
            max_concurrent_streams: args.max_concurrent_streams.clone(),
            rate: args.rate.clone(),
            rps: args.rps,
            stages: args.stages.clone(),
            arrival: args.arrival,
            until_stable: args.until_stable,
            duration: args.duration,
            warm_up_time: args.warm_up_time,
            find_max: args.find_max,
            slo: args.slo.clone(),
            step_duration: args.step_duration,
            scale: args.scale,
            shard: args.shard,
            seed: args.seed,
            interval: args.interval,
        },
        protocol: ProtocolInputs {
            proto: args.proto.clone(),
            default_proto: args.h1.then_some(ProtoChoice::H1),
            cleartext_proto: args.no_tls_proto.map(|proto| match proto {
                NoTlsProto::H2c => ProtoChoice::H2c,
                NoTlsProto::Http11 => ProtoChoice::H1,
            }),
            h2_multiplex: args.h2_multiplex,
            io: args.io,
            io_sqpoll: args.io_sqpoll,
            window_bits: args.window_bits,
            connection_window_bits: args.connection_window_bits,
            max_frame_size: args.max_frame_size,
            header_table_size: args.header_table_size,
        },
        connection: Connection {
            connect_to: args.connect_to.clone(),
            unix_socket: args.unix_socket.clone(),
            proxy: args.proxy.clone(),
            connect_timeout: args.connect_timeout,
            request_timeout: args.request_timeout,
            active_timeout: args.connection_active_timeout,
            inactivity_timeout: args.connection_inactivity_timeout,
            max_retries: (!args.no_retry).then_some(args.max_retries),
            requests_per_connection: args.requests_per_connection,
            no_keepalive: args.no_keepalive,
        },
        tls: Tls {
            resume: args.tls_resume,
            early_data: args.tls_early_data,
            alpn_list: args.alpn_list.clone(),
            insecure: args.insecure,
            cacert: args.cacert.clone(),
            cert: args.cert.clone(),
            key: args.key.clone(),
            sni: args.sni.clone(),
        },
        request: Request {
            headers: args.headers.clone(),
            data: args.data.as_deref().map(crate::cli::habits::data_file),
            body: args.body.clone(),
            method: args.method.clone(),
            expect_status: args.checks.expect_status.clone(),
            expect_header: args.checks.expect_header.clone(),
            expect_body_contains: args.checks.expect_body_contains.clone(),
            events: match args.events.events {
                EventsArg::Auto => Some(None),
                EventsArg::Sse => Some(Some(EventFormat::Sse)),
                EventsArg::Ndjson => Some(Some(EventFormat::Ndjson)),
                EventsArg::Off => None,
            },
            max_event_size: args.events.max_event_size,
        },
        grpc: grpc(args),
    }
}

fn grpc(args: &LoadArgs) -> GrpcInputs {
    let given = &args.grpc;
    GrpcInputs {
        method: given.grpc_method.clone(),
        shape: given.grpc_shape.map(|shape| match shape {
            GrpcShapeArg::Unary => CallShape::Unary,
            GrpcShapeArg::Server => CallShape::ServerStream,
            GrpcShapeArg::Client => CallShape::ClientStream,
            GrpcShapeArg::Bidi => CallShape::Bidi,
        }),
        protos: given.grpc_protos.clone(),
        import_paths: given.grpc_import_paths.clone(),
        reflect: given.grpc_reflect,
        reflected: None,
        data: given.grpc_data.clone(),
        binary_file: given.grpc_binary_file.clone(),
        stream_messages: given.grpc_stream_messages,
        stream_interval: given.grpc_stream_interval,
        max_message: given.grpc_max_message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn inputs(words: &[&str]) -> Inputs {
        let cli = crate::cli::Cli::try_parse_from(["h2load-rs"].iter().chain(words)).unwrap();
        from_flags(&cli.load)
    }

    #[test]
    fn flag_spellings_become_what_they_mean() {
        let url = "http://127.0.0.1:1/";
        let given = inputs(&["-p", "http/1.1", "--no-retry", url]);
        assert_eq!(given.protocol.cleartext_proto, Some(ProtoChoice::H1));
        assert_eq!(given.protocol.default_proto, None);
        assert_eq!(given.connection.max_retries, None);
        let given = inputs(&["--h1", "--max-retries", "5", url]);
        assert_eq!(given.protocol.default_proto, Some(ProtoChoice::H1));
        assert_eq!(given.protocol.cleartext_proto, None);
        assert_eq!(given.connection.max_retries, Some(5));
        assert_eq!(inputs(&[url]).connection.max_retries, Some(3));
        let given = inputs(&["--grpc", "/a.B/C", "--grpc-shape", "client", url]);
        assert_eq!(given.grpc.shape, Some(CallShape::ClientStream));
        assert!(given.grpc.reflected.is_none());
        let given = inputs(&["-d", "@/nonexistent/body.json", url]);
        assert_eq!(
            given.request.data.as_deref(),
            Some(std::path::Path::new("/nonexistent/body.json")),
            "curl's -d @FILE names the file"
        );
    }
}
