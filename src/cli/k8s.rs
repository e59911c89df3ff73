//! `h2load-rs k8s-job`: the flags of the Kubernetes Indexed Job it renders.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;

use crate::plan::shard::MAX_SHARDS;
use crate::units::parse_positive_duration;

/// Arguments of `h2load-rs k8s-job`.
#[derive(Debug, Args)]
pub(crate) struct K8sJobArgs {
    /// Pods, each running one part (`--shard`) of the load: N pods run it once between them.
    #[arg(long = "workers", value_name = "N",
          value_parser = crate::cli::values::count::<u64>(1, MAX_SHARDS))]
    pub(crate) workers: u64,
    /// The image holding h2load-rs as its entry point (configs/k8s/image.sh builds one).
    #[arg(long = "image", value_name = "IMAGE")]
    pub(crate) image: String,
    /// The Job's name (lowercase letters, digits and '-', at most 52): its pods' label
    /// `job-name`, which `kubectl logs -l job-name=NAME` collects.
    #[arg(long = "name", value_name = "NAME", default_value = "h2load-rs")]
    pub(crate) name: String,
    /// How far ahead of now the pods start together (`--start-at`): time for every pod to be
    /// scheduled and its image pulled. Apply the Job within it.
    #[arg(long = "lead", value_name = "DURATION", default_value = "60s",
          value_parser = parse_positive_duration)]
    pub(crate) lead: Duration,
    /// CPU each pod requests (a Kubernetes quantity: `1`, `500m`, `1.5`).
    #[arg(long = "cpu", value_name = "QUANTITY", default_value = "1", value_parser = quantity)]
    pub(crate) cpu: String,
    /// Memory each pod requests and is limited to (a Kubernetes quantity: `256Mi`, `1G`).
    #[arg(long = "memory", value_name = "QUANTITY", default_value = "256Mi",
          value_parser = quantity)]
    pub(crate) memory: String,
    /// Run the pods on their node's network, so a target on the node's 127.0.0.1 is reachable
    /// (no Service needed).
    #[arg(long = "host-network")]
    pub(crate) host_network: bool,
    /// The pods' imagePullPolicy: Never for an image imported into the node, without a registry.
    #[arg(long = "pull", value_name = "POLICY", default_value = "IfNotPresent",
          value_parser = ["IfNotPresent", "Always", "Never"])]
    pub(crate) pull: String,
    /// The load's options and URL, as for a run, after `--` (not --shard, --start-at or --json,
    /// which the Job sets).
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true
    )]
    pub(crate) load: Vec<OsString>,
}

/// A positive Kubernetes quantity (k8s.io/apimachinery `resource.Quantity`): a decimal number
/// (`1`, `1.5`, `.5`, `1.`) and one suffix, binary (`Ki` `Mi` `Gi` `Ti` `Pi` `Ei`), decimal
/// (`m` `k` `M` `G` `T` `P` `E`, or none) or an exponent (`e3`, `E-2`). The API server refuses
/// anything else, so the Job would never run; a sign is refused too (a negative request is
/// invalid, and `+` is never needed), as is zero.
fn quantity(text: &str) -> Result<String, String> {
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_end);
    let digits = number.replace('.', "");
    let number_ok = !digits.is_empty() && number.matches('.').count() <= 1;
    let exponent = |rest: &str| {
        let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
        !rest.is_empty() && rest.bytes().all(|byte| byte.is_ascii_digit())
    };
    let suffix_ok = matches!(
        suffix,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "m" | "k" | "M" | "G" | "T" | "P" | "E"
    ) || suffix.strip_prefix(['e', 'E']).is_some_and(exponent);
    if !number_ok || !suffix_ok {
        return Err(format!(
            "'{}' is not a Kubernetes quantity: a number and one suffix (Ki, Mi, Gi, Ti, Pi, Ei, m, k, M, G, T, P, E or an exponent such as e3), e.g. 500m or 256Mi",
            text.escape_debug()
        ));
    }
    if digits.bytes().all(|byte| byte == b'0') {
        return Err(format!("'{text}' is zero: a pod needs some"));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn quantities_follow_kubernetes_grammar() {
        for good in [
            "1", "500m", "1.5", ".5", "1.", "256Mi", "1Gi", "2k", "1e3", "1E-2", "3e+1",
        ] {
            assert_eq!(super::quantity(good).as_deref(), Ok(good), "{good}");
        }
        for bad in [
            "", "1.2.3", "Mi", "1MiB", "1mi", "1 Mi", "-1", "+1", "1e", "1e3Mi", "0", "0.0m", "1K",
            "half", ".",
        ] {
            assert!(super::quantity(bad).is_err(), "{bad}");
        }
    }
}
