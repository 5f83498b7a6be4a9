//! The Linux twin's boot (run/twin/): the image, initramfs and command line one Linux boot
//! uses, which qemu.rs turns into `-kernel`, `-initrd` and `-append`.

use super::RunConfig;
use numalab_algo::bench::Clock;
use numalab_algo::options::bench::{BENCH, BENCH_DET_QUANTUM, BENCH_SMOKE};
use std::path::PathBuf;

/// The Linux image and initramfs one boot uses (qemu.rs turns it into -kernel/-initrd/-append).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinuxBoot {
    pub vmlinuz: PathBuf,
    pub initramfs: PathBuf,
    /// The kernel release, e.g. `6.1.0-57-amd64`.
    pub release: String,
    /// `--linux-append`: more words for Linux's command line.
    pub append: Option<String>,
    /// Which Linux (6.1 or 7.x).
    pub kernel: crate::build::linux_kernel::LinuxKernel,
    /// The Debian packages it was built from, `package=version` each (the JSONL header).
    pub packages: Vec<String>,
}

impl LinuxBoot {
    /// Linux's command line for `config`: serial console, no timestamps (BENCH and KTAP lines
    /// start the line as numalab's do), reboot (QEMU exits, -no-reboot) on a panic, and the
    /// module's parameters from the bench options (`bench=`, `bench.smoke`, the clock). A
    /// det boot (`-icount` with every CPU online, numalab's det machine) gets `clock=det` and
    /// numalab's `bench.det_quantum` as `det_quantum` (run/twin/det.rs); an icount boot (one
    /// CPU online) `clock=icount`, any other `clock=tsc`.
    pub fn cmdline(&self, config: &RunConfig) -> String {
        let mut words = vec![
            "console=ttyS0".to_string(),
            "printk.time=0".into(),
            "panic=-1".into(),
        ];
        if config.host.icount && config.machine.cpus_online != Some(1) {
            words.push("numalab_twin.clock=det".into());
            let quantum = config.kernel.options.options().get(&BENCH_DET_QUANTUM);
            words.push(format!("numalab_twin.det_quantum={quantum}"));
        } else {
            let clock = if config.host.icount {
                Clock::Icount
            } else {
                Clock::Tsc
            };
            words.push(format!("numalab_twin.clock={clock}"));
        }
        if let Some(smoke) = config.kernel.options.get(&BENCH_SMOKE) {
            words.push(format!("numalab_twin.smoke={}", u8::from(smoke)));
        }
        if let Some(selection) = config.kernel.options.get(&BENCH) {
            words.push(format!(
                "numalab_twin.bench={}",
                selection.names().join(",")
            ));
        }
        words.extend(
            self.append
                .iter()
                .flat_map(|a| a.split_whitespace().map(String::from)),
        );
        words.join(" ")
    }

    /// The QEMU arguments that boot it (instead of numalab's disk and fw_cfg command line).
    /// Two more make Linux's own random sources repeatable, so that icount runs repeat down to
    /// the instruction: `-seed` turns RDRAND/RDSEED into a seeded generator (Linux seeds its
    /// RNG, KASLR and SLAB_FREELIST_RANDOM's freelist order from them), and a fixed RTC on
    /// virtual time replaces the host's wall clock that Linux mixes into its RNG at boot.
    /// Without them two boots differ in kmalloc/random, burst256 and vmalloc (measured,
    /// docs/linux-twin.md). numalab reads neither, so its boots go without.
    pub fn qemu_args(&self, config: &RunConfig) -> Vec<String> {
        vec![
            "-seed".into(),
            "1".into(),
            "-rtc".into(),
            "base=2024-01-01T00:00:00,clock=vm".into(),
            "-kernel".into(),
            self.vmlinuz.display().to_string(),
            "-initrd".into(),
            self.initramfs.display().to_string(),
            "-append".into(),
            self.cmdline(config),
        ]
    }
}
