//! Which cells of a sweep the built-in target's fault mode (`--target-fault`) can serve: its raw
//! server speaks one protocol (or none), and a cell of another would only wait out its connect or
//! request timeout, so such a sweep is a usage error naming the cells to drop.

use anyhow::Result;
use clap::ValueEnum;

use crate::cli::{LoadArgs, NoTlsProto, ProtoArg};
use crate::server::Speaks;
use crate::usage_bail;

/// A usage error if `args` sweep a protocol their `--target-fault` cannot serve.
pub(super) fn check(args: &LoadArgs) -> Result<()> {
    let Some(fault) = args.target_fault else {
        return Ok(());
    };
    let asked: Vec<Option<ProtoArg>> = match args.proto.is_empty() {
        true => vec![None],
        false => args.proto.iter().copied().map(Some).collect(),
    };
    for asked in asked {
        let (proto, tls) = resolved(args, asked);
        let served = match fault.speaks() {
            Speaks::Http1 => proto == ProtoArg::H1 && !tls,
            Speaks::H2c => proto == ProtoArg::H2c && !tls,
            Speaks::Cleartext => !tls,
            Speaks::Tcp => proto != ProtoArg::H3,
        };
        if served {
            continue;
        }
        let (speaks, suggested) = match fault.speaks() {
            Speaks::Http1 => ("cleartext HTTP/1.1", "h1"),
            Speaks::H2c => ("cleartext HTTP/2 by prior knowledge", "h2c"),
            Speaks::Cleartext => ("cleartext TCP, no TLS", "h1, h2c or h2c-upgrade"),
            Speaks::Tcp => ("TCP, where h3 is not spoken", "h1, h2c, h2 or auto"),
        };
        let name = proto
            .to_possible_value()
            .map_or_else(String::new, |value| value.get_name().to_owned());
        let (cells, remedy) = match asked {
            // An h1 cell is over TLS only because --target-tls asks it.
            _ if tls && proto == ProtoArg::H1 => (
                format!("{name} cells over TLS"),
                "drop --target-tls".to_owned(),
            ),
            None => (
                match args.h1 {
                    true => format!("{name} cells (--h1)"),
                    false => format!("{name} cells (the default here)"),
                },
                format!("choose {suggested} with --proto"),
            ),
            Some(_) => (format!("{name} cells"), format!("drop {name} from --proto")),
        };
        usage_bail!(
            "--target-fault {}: the faulty built-in target speaks {speaks} only, so {cells} would only time out; {remedy}",
            fault.name()
        );
    }
    Ok(())
}

/// The protocol a cell asking `asked` speaks to the built-in target, and whether over TLS (a
/// faulty target's HTTP/1.1 cells use TLS only with `--target-tls`).
fn resolved(args: &LoadArgs, asked: Option<ProtoArg>) -> (ProtoArg, bool) {
    let proto = match asked {
        Some(proto) => proto,
        None if args.h1 => ProtoArg::H1,
        // -p applies to http:// URLs only.
        None if args.target_tls => ProtoArg::Auto,
        None if args.no_tls_proto == Some(NoTlsProto::Http11) => ProtoArg::H1,
        None => ProtoArg::H2c,
    };
    let tls = match proto {
        ProtoArg::H2 | ProtoArg::Auto | ProtoArg::H3 => true,
        ProtoArg::H1 => args.target_tls,
        ProtoArg::H2c | ProtoArg::H2cUpgrade => false,
    };
    (proto, tls)
}
