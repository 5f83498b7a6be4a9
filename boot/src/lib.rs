//! numalab's host side: builds the kernel and its BIOS/UEFI images, runs them under QEMU with a
//! NUMA topology, and reads back what the kernel printed (KTAP, BENCH). `qemu-run.sh` and the
//! host tests in tests/ both go through this crate.

// The runner's stages, in the order a command goes through them (docs/architecture.md):
// cli (Request) -> resolve (Job) -> run (plan, the boots) -> qemu (one boot) -> ktap and
// bench (what the kernel printed) -> report (tables, charts, HTML). `build` makes the images.
pub mod bench;
pub mod build;
pub mod cli;
pub mod costs;
pub mod machine;
pub mod progress;
pub mod qemu;
pub mod report;
pub mod resolve;
pub mod run;
pub mod sweep;
pub mod trace;
pub mod wire;

pub use build::image::Firmware;
pub use qemu::{Outcome, RunConfig, Verdict};

/// Builds the kernel and the image for `config.firmware`, then boots it.
pub fn build_and_run(config: &RunConfig) -> Result<Outcome, String> {
    let kernel = build::image::build_kernel()?;
    let img = build::image::build_image(&kernel, config.machine.firmware)?;
    Ok(qemu::boot(config, &img))
}
