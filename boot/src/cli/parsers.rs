//! The value parsers of the command line's options: each checks its value when the command
//! line is read, before anything is built or booted.

use crate::qemu::parse_mem_mib;
use crate::qemu::presets::{self, Preset};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use numalab_algo::options::{Setting, Suite};

/// `--suite`: a value of the kernel's `suite=` option except `none` (parsed by its enum).
pub(super) fn suite_parser() -> impl TypedValueParser<Value = Suite> {
    PossibleValuesParser::new(
        Suite::ALL
            .iter()
            .filter(|s| **s != Suite::None)
            .map(|s| s.name()),
    )
    .try_map(|name| Suite::from_name(&name).ok_or_else(|| format!("unknown suite '{name}'")))
}

/// `--topology`: a preset name; the help lists every preset with what it is.
pub(super) fn topology_parser() -> impl TypedValueParser<Value = Preset> {
    PossibleValuesParser::new(
        presets::all()
            .into_iter()
            .map(|p| PossibleValue::new(p.name).help(p.about)),
    )
    .try_map(|name| presets::find(&name).ok_or_else(|| format!("unknown topology '{name}'")))
}

pub(super) fn parse_smp(text: &str) -> Result<u32, String> {
    let n: u32 = text.parse().map_err(|_| "not a number".to_string())?;
    if (1..=255).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is outside 1..=255 (the TCG limit)"))
    }
}

pub(super) fn parse_host_map(text: &str) -> Result<crate::qemu::host_numa::HostMap, String> {
    crate::qemu::host_numa::parse_host_map(text).map(crate::qemu::host_numa::HostMap)
}

pub(super) fn parse_reps(text: &str) -> Result<u32, String> {
    let n: u32 = text.parse().map_err(|_| "not a number".to_string())?;
    if (1..=20).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is outside 1..=20"))
    }
}

pub(super) fn parse_mem(text: &str) -> Result<u64, String> {
    let mib = parse_mem_mib(text)
        .ok_or_else(|| String::from("expected a size such as 2G or 512M, at least 64M"))?;
    // Bounded by what QEMU can address; what this host can back is checked by
    // `resolve` (parsing reads nothing of the host).
    match crate::machine::scale::mem_problem(mib, None) {
        Some(why) => Err(why),
        None => Ok(mib),
    }
}

/// `--set KEY=VALUE`: checked against the kernel's own option table (numalab_algo::options)
/// before anything is built or booted, so a misspelt key or a bad value is a usage error that
/// names the closest key and what it accepts.
pub(super) fn parse_set(text: &str) -> Result<Setting, String> {
    Setting::parse(text)
}
