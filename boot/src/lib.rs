//! numalab's host side: builds the kernel and its BIOS/UEFI images, runs them under QEMU with a
//! NUMA topology, and reads back what the kernel printed (KTAP, BENCH). `qemu-run.sh` and the
//! host tests in tests/ both go through this crate.

pub mod accel;
pub mod bench;
pub mod bench_svg;
pub mod build_progress;
pub mod cli;
pub mod costs;
pub mod exit;
pub mod guest_memory;
pub mod host_numa;
pub mod host_pin;
pub mod html;
pub mod html_escape;
pub mod image;
pub mod interrupt;
pub mod ktap;
pub mod linux_kernel;
pub mod machine;
pub mod out_paths;
pub mod presets;
pub mod progress;
pub mod qemu;
pub mod qemu_machine;
pub mod qemu_report;
pub mod qemu_stderr;
pub mod resolve;
pub mod run;
pub mod serial_capture;
pub mod soak;
pub mod sweep;
pub mod time_limit;
pub mod trace;
pub mod twin_traced;
pub mod user_path;
pub mod wire;

pub use image::Firmware;
pub use qemu::{Outcome, RunConfig, Verdict};

/// Builds the kernel and the image for `config.firmware`, then boots it.
pub fn build_and_run(config: &RunConfig) -> Result<Outcome, String> {
    let kernel = image::build_kernel()?;
    let img = image::build_image(&kernel, config.firmware)?;
    Ok(qemu::run(config, &img))
}
