//! `h2load-rs k8s-job`: the flags of the Kubernetes Indexed Job it renders.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;

use crate::cli::shard::MAX_SHARDS;
use crate::units::parse_positive_duration;

/// Arguments of `h2load-rs k8s-job`.
#[derive(Debug, Args)]
pub struct K8sJobArgs {
    /// Pods, each running one part (`--shard`) of the load: N pods run it once between them.
    #[arg(long = "workers", value_name = "N",
          value_parser = crate::cli::values::count::<u64>(1, MAX_SHARDS))]
    pub workers: u64,
    /// The image holding h2load-rs as its entry point (configs/k8s/image.sh builds one).
    #[arg(long = "image", value_name = "IMAGE")]
    pub image: String,
    /// The Job's name (lowercase letters, digits and '-', at most 52): its pods' label
    /// `job-name`, which `kubectl logs -l job-name=NAME` collects.
    #[arg(long = "name", value_name = "NAME", default_value = "h2load-rs")]
    pub name: String,
    /// How far ahead of now the pods start together (`--start-at`): time for every pod to be
    /// scheduled and its image pulled. Apply the Job within it.
    #[arg(long = "lead", value_name = "DURATION", default_value = "60s",
          value_parser = parse_positive_duration)]
    pub lead: Duration,
    /// CPU each pod requests (a Kubernetes quantity).
    #[arg(long = "cpu", value_name = "QUANTITY", default_value = "1")]
    pub cpu: String,
    /// Memory each pod requests and is limited to (a Kubernetes quantity).
    #[arg(long = "memory", value_name = "QUANTITY", default_value = "256Mi")]
    pub memory: String,
    /// Run the pods on their node's network, so a target on the node's 127.0.0.1 is reachable
    /// (no Service needed).
    #[arg(long = "host-network")]
    pub host_network: bool,
    /// The pods' imagePullPolicy: Never for an image imported into the node, without a registry.
    #[arg(long = "pull", value_name = "POLICY", default_value = "IfNotPresent",
          value_parser = ["IfNotPresent", "Always", "Never"])]
    pub pull: String,
    /// The load's options and URL, as for a run, after `--` (not --shard, --start-at or --json,
    /// which the Job sets).
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true
    )]
    pub load: Vec<OsString>,
}
