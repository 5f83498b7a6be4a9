//! The machine shapes that several test files check: each is booted once per test process
//! ([`super::shared`]) with the union of the options those files need, and every file checks
//! its own layer in the one serial log. A shape's options only add output (`smp.verbose`,
//! `acpi.dump`) or shorten a loop; none changes what another layer's tests do.

use super::{config, shared_pass, Outcome, RunConfig};
use std::sync::Arc;
use std::time::Duration;

/// The whole `test` suite on `topology`, with the options every layer's checks need:
/// `smp.verbose=1` (s02: each CPU's APIC id and node), `vmalloc.test_loops=50` (s05).
fn whole_suite(topology: &str) -> RunConfig {
    let mut c = config(topology);
    c.kernel.options.set_word("smp.verbose=1").unwrap();
    c.kernel.options.set_word("vmalloc.test_loops=50").unwrap();
    c
}

/// `uma`: no `-numa`, 4 CPUs, 1 GiB; the whole test suite (s00, s01, s02, s03, s04, s05).
pub fn uma_config() -> RunConfig {
    whole_suite("uma")
}

/// [`uma_config`]'s outcome, required to pass.
pub fn uma() -> Arc<Outcome> {
    shared_pass(&uma_config())
}

/// `4node`: 4 nodes x 2 CPUs with a SLIT; the whole test suite plus `acpi.dump=1` (s01's table
/// dump) (s01, s02, s03, s04, s05).
pub fn four_node_config() -> RunConfig {
    let mut c = whole_suite("4node");
    c.kernel.options.set_word("acpi.dump=1").unwrap();
    c
}

/// [`four_node_config`]'s outcome, required to pass.
pub fn four_node() -> Arc<Outcome> {
    shared_pass(&four_node_config())
}

/// `memoryless` (seed 003): the whole test suite (s01, s02, s03, s04).
pub fn memoryless_config() -> RunConfig {
    whole_suite("memoryless")
}

/// [`memoryless_config`]'s outcome, required to pass.
pub fn memoryless() -> Arc<Outcome> {
    shared_pass(&memoryless_config())
}

/// `8node`: 8 nodes x 8 CPUs, 64 vCPUs; the whole test suite (s01, s02, s04). Per-CPU
/// structures sized by the CPU count only cross a page here (a destroyed
/// SLUB cache kept its 64 * 320-byte per-CPU array, whole heap pages). On the 2-core host
/// the boot took 121.7 s inside a whole `./qemu-run.sh test` (3 min 57 s in all), 142.8 s
/// on its own, 183.1 s beside another session's QEMUs: under 3 minutes, so not `#[ignore]`d.
pub fn eight_node_config() -> RunConfig {
    let mut c = whole_suite("8node");
    c.host.timeout = Duration::from_secs(600);
    c
}

/// [`eight_node_config`]'s outcome, required to pass.
pub fn eight_node() -> Arc<Outcome> {
    shared_pass(&eight_node_config())
}

/// `4node`: the whole `stress` suite (s02's lock hammer, s03's frame stress, and the SLUB
/// stress test).
pub fn four_node_stress_config() -> RunConfig {
    let mut c = RunConfig::new("4node", numalab_algo::options::Suite::Stress);
    c.host.timeout = Duration::from_secs(300);
    c
}

/// [`four_node_stress_config`]'s outcome, required to pass.
pub fn four_node_stress() -> Arc<Outcome> {
    shared_pass(&four_node_stress_config())
}

/// `uma` with kernel options that are wrong in three ways (an unknown key, a bad `suite`, a
/// bad `vmalloc.nodes`), only the options test: the run must fail naming each (s00, s05).
pub fn bad_options_config() -> RunConfig {
    let mut c = config("uma");
    c.kernel.options.set_word("filter=options").unwrap();
    c.kernel.options.push_unchecked("no.such.key=1");
    c.kernel.options.push_unchecked("suite=fast");
    c.kernel.options.push_unchecked("vmalloc.nodes=node");
    c
}

/// [`bad_options_config`]'s outcome (a failed run).
pub fn bad_options() -> Arc<Outcome> {
    super::shared(&bad_options_config())
}
