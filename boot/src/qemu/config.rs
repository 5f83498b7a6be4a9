//! A boot's configuration: the guest machine, what runs on it, how QEMU runs on this host and
//! where the output goes, and its rendering into QEMU's arguments and the kernel's command line.

use super::machine::QemuMachine;
use super::presets::Preset;
use super::{plugin, LinuxBoot};
use crate::build::image::Firmware;
use numalab_algo::bench::Clock;
use numalab_algo::options::{bench::BENCH_CLOCK, run::SUITE, Cmdline, Suite};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything that describes one boot, in four parts: the guest machine, what runs on it,
/// how QEMU runs on this host, and where its output goes.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub machine: MachineSpec,
    pub kernel: KernelSpec,
    pub host: HostSpec,
    pub output: OutputSpec,
}

/// The guest machine: firmware, NUMA shape, CPUs and memory.
#[derive(Clone, Debug)]
pub struct MachineSpec {
    pub firmware: Firmware,
    pub topology: Preset,
    pub smp: Option<u32>,
    pub mem_mib: Option<u64>,
    /// Start QEMU with only this many of the machine's CPUs present (`-smp K,maxcpus=N`: every
    /// node and every CPU's place in the SRAT kept); None: all of them.
    pub cpus_online: Option<u32>,
    /// The machine in QEMU's terms when the arguments after `--` (or a replayed machine)
    /// describe it; None: the preset `topology`, rescaled by `smp` and `mem_mib`.
    pub described: Option<QemuMachine>,
}

/// What runs on the machine: numalab's suite and options, or a Linux twin boot.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    /// Kernel options, typed (`options.set(&SLUB_DESIGN, Design::Partial)`), rendered into
    /// the fw_cfg command line by `kernel_cmdline`.
    pub options: Cmdline,
    pub suite: Suite,
    /// Boot Linux (the twin, run/twin/) instead of numalab's image: `-kernel`, `-initrd`
    /// and `-append` replace the disk and the fw_cfg command line.
    pub linux: Option<LinuxBoot>,
}

/// How QEMU runs on this host: binary, accelerator, icount, placement, time limit.
#[derive(Clone, Debug)]
pub struct HostSpec {
    pub timeout: Duration,
    pub icount: bool,
    /// `--accel` (resolved by `resolve`: tcg or kvm); an icount boot runs under TCG anyway.
    pub accel: crate::qemu::accel::Accel,
    /// Host placement under KVM (host_numa.rs): pinning, node map, memory binding.
    pub placement: crate::qemu::host_numa::Options,
    pub qemu: Option<PathBuf>,
    /// The other arguments after `--`, appended to QEMU's.
    pub extra: Vec<String>,
}

/// Where the boot's output goes.
#[derive(Clone, Debug)]
pub struct OutputSpec {
    pub log: Option<PathBuf>,
    /// Echo the serial console while it runs.
    pub echo: bool,
    /// Without `echo`: still echo the lines that say something went wrong (a top-level
    /// `not ok`, a panic, an exception, a warning no test declared).
    pub echo_failures: bool,
    /// `--trace mem`: load the trace plugin with these files (trace/, docs/trace.md).
    pub trace: Option<plugin::TraceFiles>,
}

impl RunConfig {
    /// A quiet run of `suite` on the preset `topology` (for host tests).
    pub fn new(topology: &str, suite: Suite) -> RunConfig {
        RunConfig {
            machine: MachineSpec {
                firmware: Firmware::Bios,
                topology: crate::qemu::presets::find(topology)
                    .unwrap_or_else(|| panic!("no topology preset named {topology}")),
                smp: None,
                mem_mib: None,
                cpus_online: None,
                described: None,
            },
            kernel: KernelSpec {
                options: Cmdline::new(),
                suite,
                linux: None,
            },
            host: HostSpec {
                timeout: Duration::from_secs(300),
                icount: false,
                accel: crate::qemu::accel::Accel::Tcg,
                placement: crate::qemu::host_numa::Options::default(),
                qemu: None,
                extra: Vec::new(),
            },
            output: OutputSpec {
                log: None,
                echo: false,
                echo_failures: false,
                trace: None,
            },
        }
    }

    /// True when the user's own arguments (or a replayed machine) describe the machine (then
    /// the preset is dropped).
    pub fn user_describes_machine(&self) -> bool {
        self.machine.described.is_some()
    }

    /// The QEMU arguments the user's machine and the other arguments after `--` come to (the
    /// machine rendered from its typed form).
    pub fn user_qemu_args(&self) -> Vec<String> {
        let mut args = self
            .machine
            .described
            .as_ref()
            .map(|m| m.args(None))
            .unwrap_or_default();
        args.extend(self.host.extra.iter().cloned());
        args
    }

    /// Puts QEMU arguments `args` before the other arguments: the machine they describe (if
    /// any) becomes the boot's machine, the rest go to `extra`. `Err`: an argument that
    /// cannot be read, in one line.
    pub fn prepend_qemu_args(&mut self, args: &[String]) -> Result<(), String> {
        let (machine, mut rest) = crate::qemu::machine::split(args)?;
        if machine.is_some() {
            self.machine.described = machine;
        }
        rest.append(&mut self.host.extra);
        self.host.extra = rest;
        Ok(())
    }

    /// The suite and the options, in that order (what a run record shows).
    fn typed_cmdline(&self) -> Cmdline {
        let mut line = Cmdline::new();
        line.set_choice(&SUITE, self.kernel.suite);
        line.extend(&self.kernel.options);
        line
    }

    /// The kernel command line handed over fw_cfg, without what the boot kind adds.
    pub fn cmdline(&self) -> String {
        self.typed_cmdline().render()
    }

    /// The command line the kernel gets: `cmdline()`, plus `bench.clock=icount` under
    /// `--icount` (unless set explicitly), so BENCH lines say how their ticks were counted.
    /// The one place the typed options become text.
    pub fn kernel_cmdline(&self) -> String {
        let mut line = self.typed_cmdline();
        if self.host.icount && !self.kernel.options.is_set(&BENCH_CLOCK) {
            line.set_choice(&BENCH_CLOCK, Clock::Icount);
        }
        line.render()
    }

    /// The QEMU binary to run.
    pub fn qemu_binary(&self) -> PathBuf {
        self.host
            .qemu
            .clone()
            .unwrap_or_else(|| PathBuf::from("qemu-system-x86_64"))
    }

    /// The full QEMU argument list for `image`.
    pub fn qemu_args(&self, image: &Path) -> Result<Vec<String>, String> {
        let mut args: Vec<String> = vec![
            "-display".into(),
            "none".into(),
            "-net".into(),
            "none".into(),
            "-no-reboot".into(),
            "-monitor".into(),
            "none".into(),
            "-serial".into(),
            "stdio".into(),
            "-device".into(),
            "isa-debug-exit,iobase=0xf4,iosize=0x04".into(),
        ];
        args.extend(crate::qemu::accel::qemu_args(
            self.host.accel,
            self.host.icount,
        ));
        if let Some(linux) = &self.kernel.linux {
            args.extend(linux.qemu_args(self));
        } else {
            args.extend([
                "-drive".into(),
                // snapshot=on: writes go to a temporary overlay, so parallel runs can share the
                // image.
                format!("format=raw,snapshot=on,file={}", image.display()),
                "-fw_cfg".into(),
                // fw_cfg's option parser splits on commas; QEMU's escape for a comma is ",,".
                format!(
                    "name=opt/numalab/cmdline,string={}",
                    self.kernel_cmdline().replace(',', ",,")
                ),
            ]);
        }
        if self.machine.firmware == Firmware::Uefi && self.kernel.linux.is_none() {
            args.push("-bios".into());
            args.push(ovmf_path(self.host.qemu.as_deref())?.display().to_string());
        }
        if self.host.icount {
            args.push("-icount".into());
            args.push("shift=0,sleep=off".into());
        }
        if let Some(t) = &self.output.trace {
            args.extend(t.qemu_args());
        }
        args.extend(self.machine_args()?);
        Ok(args)
    }

    /// The machine's part of the QEMU arguments: the machine rendered once (the preset with
    /// `--smp`, `--mem`, or the machine given after `--`; under KVM placed on the host,
    /// host_numa.rs), with only `cpus_online` CPUs present when set, then the other
    /// arguments after `--`.
    pub fn machine_args(&self) -> Result<Vec<String>, String> {
        let machine = match self.placement()? {
            Some((placed, _)) => placed,
            None => self.typed_machine(),
        };
        let mut args = machine.args(self.machine.cpus_online);
        args.extend(self.host.extra.iter().cloned());
        Ok(args)
    }

    /// The machine's CPUs and MiB: the preset's (or `--smp`/`--mem`), or for a machine given
    /// after `--` its `-smp` and `-m` (1 CPU and 128 MiB, QEMU's defaults, when absent).
    pub fn machine_size(&self) -> (u32, u64) {
        match &self.machine.described {
            Some(m) => (m.cpus(), m.mem_mib()),
            None => (
                self.machine.smp.unwrap_or(self.machine.topology.cpus),
                self.machine
                    .mem_mib
                    .unwrap_or(self.machine.topology.mem_mib),
            ),
        }
    }

    /// The CPUs present when the kernel boots: `cpus_online`, else all of the machine's.
    pub fn vcpus(&self) -> u32 {
        self.machine
            .cpus_online
            .unwrap_or_else(|| self.machine_size().0)
    }
}

/// Parses `512M`, `2G`, `1024` (MiB) into MiB (at least 64).
pub fn parse_mem_mib(text: &str) -> Option<u64> {
    crate::qemu::machine::parse_size_mib(text).filter(|&m| m >= 64)
}

/// OVMF next to a bundled QEMU (qemu-bundle.sh puts it in DIR/share), else Debian's.
fn ovmf_path(qemu: Option<&Path>) -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(dir) = qemu.and_then(|q| q.parent()) {
        candidates.push(dir.join("share/OVMF.fd"));
    }
    candidates.push(PathBuf::from("/usr/share/ovmf/OVMF.fd"));
    candidates.push(PathBuf::from("/usr/share/qemu/OVMF.fd"));
    candidates.into_iter().find(|p| p.exists()).ok_or_else(|| {
        "UEFI firmware not found: /usr/share/ovmf/OVMF.fd is missing (apt-get install ovmf)"
            .to_string()
    })
}
