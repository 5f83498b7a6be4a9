//! Which Linux the twin boots (run/twin/, docs/linux-twin.md): a leaf module, so that the
//! command line (cli), QEMU's arguments (qemu) and the twin all name it without an import
//! circle.

/// Which Linux the twin boots: Debian 12's 6.1 (the partial design) or the pinned Debian 13
/// backports 7.x (the sheaves design, linux/linux7.pin).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinuxKernel {
    V6_1,
    V7,
}

impl LinuxKernel {
    /// Its `--kernel` name.
    pub fn name(self) -> &'static str {
        match self {
            LinuxKernel::V6_1 => "linux-6.1",
            LinuxKernel::V7 => "linux-7",
        }
    }

    /// Its boots' serial logs start with this (`linux-icount.log`, `linux7-icount.log`).
    pub fn log_prefix(self) -> &'static str {
        match self {
            LinuxKernel::V6_1 => "linux-",
            LinuxKernel::V7 => "linux7-",
        }
    }

    /// The SLUB design it has: 6.1 the per-CPU partial slabs, 7.x sheaves for every cache.
    pub fn design(self) -> &'static str {
        match self {
            LinuxKernel::V6_1 => "partial",
            LinuxKernel::V7 => "sheaves",
        }
    }

    /// Whether `name` (a record's `kernel` field, a twin header's `kernel=`) names a Linux
    /// kernel (`linux-6.1.192`, `linux-7.3.4`) rather than numalab.
    pub fn is_linux(name: &str) -> bool {
        name.starts_with("linux-")
    }

    /// Whether a record's `kernel` field (`linux-6.1.192`, `linux-7.3.4`) is this kernel's.
    pub fn owns(self, record_kernel: &str) -> bool {
        match self {
            LinuxKernel::V6_1 => record_kernel.starts_with("linux-6."),
            LinuxKernel::V7 => record_kernel.starts_with("linux-7."),
        }
    }
}
