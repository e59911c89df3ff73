//! Which cells of a sweep the built-in target's fault mode (`--target-fault`) can serve: its raw
//! server speaks one protocol (or none), and a cell of another would only wait out its connect or
//! request timeout, so such a sweep is a usage error naming the cells to drop.

use anyhow::Result;
use clap::ValueEnum;

use crate::plan::{Inputs, ProtoChoice};
use crate::server::{Fault, Speaks};
use crate::usage_bail;

/// A usage error if `inputs` sweep a protocol the built-in target's `fault` cannot serve.
pub(super) fn check(fault: Option<Fault>, inputs: &Inputs) -> Result<()> {
    let Some(fault) = fault else {
        return Ok(());
    };
    let asked: Vec<Option<ProtoChoice>> = match inputs.protocol.proto.is_empty() {
        true => vec![None],
        false => inputs.protocol.proto.iter().copied().map(Some).collect(),
    };
    for asked in asked {
        let (proto, tls) = resolved(inputs, asked);
        let served = match fault.speaks() {
            Speaks::Http1 => proto == ProtoChoice::H1 && !tls,
            Speaks::H2c => proto == ProtoChoice::H2c && !tls,
            Speaks::Cleartext => !tls,
            Speaks::Tcp => proto != ProtoChoice::H3,
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
            _ if tls && proto == ProtoChoice::H1 => (
                format!("{name} cells over TLS"),
                "drop --target-tls".to_owned(),
            ),
            None => (
                match inputs.protocol.default_proto.is_some() {
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
fn resolved(inputs: &Inputs, asked: Option<ProtoChoice>) -> (ProtoChoice, bool) {
    let protocol = &inputs.protocol;
    let proto = match (asked, protocol.default_proto) {
        (Some(proto), _) | (None, Some(proto)) => proto,
        // -p applies to http:// URLs only.
        (None, None) if inputs.target.target_tls => ProtoChoice::Auto,
        (None, None) => protocol.cleartext_proto.unwrap_or(ProtoChoice::H2c),
    };
    let tls = match proto {
        ProtoChoice::H2 | ProtoChoice::Auto | ProtoChoice::H3 => true,
        ProtoChoice::H1 => inputs.target.target_tls,
        ProtoChoice::H2c | ProtoChoice::H2cUpgrade => false,
    };
    (proto, tls)
}
