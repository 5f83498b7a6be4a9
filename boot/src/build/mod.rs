//! Building what boots: the kernel ELF and its BIOS/UEFI images (image.rs), cargo's progress
//! while they build (progress.rs), and which Linux the twin boots (linux_kernel.rs).

pub mod image;
pub mod linux_kernel;
pub mod progress;
