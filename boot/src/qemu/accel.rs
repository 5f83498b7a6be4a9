//! The accelerator a boot runs under (`--accel tcg|kvm|auto`): QEMU's TCG emulator, or KVM
//! with the host's own CPU model. Only host-time (tsc, uma) boots run under KVM; det and
//! icount boots need `-icount`, which QEMU allows only under TCG ("-icount is not allowed
//! with hardware virtualization"), so they always run under TCG (docs/running.md, "On your
//! own server").

use std::path::Path;

/// `--accel`: what the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Accel {
    /// QEMU's TCG emulator (the default)
    #[default]
    Tcg,
    /// KVM (`-accel kvm -cpu host`) for the host-time boots; /dev/kvm must open
    Kvm,
    /// kvm when /dev/kvm opens, else tcg
    Auto,
}

impl Accel {
    /// The value as the command line and the reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
            Accel::Auto => "auto",
        }
    }

    /// What `self` comes to on a host where [`kvm_problem`] of `/dev/kvm` says `problem`:
    /// `auto` becomes kvm or tcg; `kvm` on a host without a usable KVM is refused with the
    /// reason (exit status 2).
    pub fn resolve(self, problem: Option<String>) -> Result<Accel, String> {
        match (self, problem) {
            (Accel::Auto, None) | (Accel::Kvm, None) => Ok(Accel::Kvm),
            (Accel::Auto, Some(_)) | (Accel::Tcg, _) => Ok(Accel::Tcg),
            (Accel::Kvm, Some(why)) => Err(format!("--accel kvm: {why}")),
        }
    }
}

/// The KVM device.
pub const KVM_DEVICE: &str = "/dev/kvm";

/// Why KVM cannot be used through `device` (None: it opens read-write, as QEMU opens it).
pub fn kvm_problem(device: &Path) -> Option<String> {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
    {
        Ok(_) => None,
        Err(e) => Some(format!("{} does not open: {e}", device.display())),
    }
}

/// Why KVM, though its device opens, would not boot numalab in useful time: the host's KVM
/// is PVM (the `kvm_pvm` module under the sysfs root `sys`), which runs a guest's 16- and
/// 32-bit firmware and boot loader instruction by instruction. Measured on this project's
/// host (docs/benchmarks.md, "KVM"): SeaBIOS and the boot loader did not reach the kernel in
/// 400 s, OVMF not in 200 s.
pub fn pvm_note(sys: &Path) -> Option<String> {
    sys.join("module/kvm_pvm").exists().then(|| {
        "this host's KVM is PVM (kvm_pvm), which emulates the firmware and boot loader \
         instruction by instruction: numalab does not reach its kernel in minutes"
            .to_string()
    })
}

/// The QEMU arguments of a boot under `accel` (resolved: tcg or kvm) that does (`icount`) or
/// does not count instructions: TCG's `-cpu max`, or KVM with the host's CPU model. Under KVM
/// `+invtsc` lets QEMU state the TSC rate in CPUID leaf 0x40000010 (the kernel then reads it
/// instead of calibrating against the PIT), and `-arch-capabilities` keeps QEMU 7.2 from
/// aborting on hosts whose KVM lists IA32_ARCH_CAPABILITIES but refuses the write ("failed to
/// set MSR 0x10a", seen on this project's nested AMD host).
pub fn qemu_args(accel: Accel, icount: bool) -> Vec<String> {
    let words: &[&str] = if runs_kvm(accel, icount) {
        &["-accel", "kvm", "-cpu", "host,+invtsc,-arch-capabilities"]
    } else {
        &["-cpu", "max"]
    };
    words.iter().map(|w| w.to_string()).collect()
}

/// Whether a boot under `accel` that does (`icount`) or does not count instructions runs
/// under KVM: only a kvm boot without icount.
pub fn runs_kvm(accel: Accel, icount: bool) -> bool {
    accel == Accel::Kvm && !icount
}

/// QEMU 7.2's first line when KVM cannot go on with the guest (kvm-all.c: an internal error
/// such as an instruction KVM cannot emulate, or a failed VM entry), if `stderr` has one.
/// QEMU then stops the guest and waits (RUN_STATE_INTERNAL_ERROR) instead of exiting: a run
/// that looks halted, with QEMU using no CPU.
pub fn kvm_stop_line(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("KVM internal error") || l.starts_with("KVM: entry failed"))
}

/// The accelerator's name in the console, the JSONL header and the HTML report.
pub fn runs_on(accel: Accel, icount: bool) -> &'static str {
    if runs_kvm(accel, icount) {
        "kvm"
    } else {
        "tcg"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_device_and_kvm_without_it_is_refused() {
        assert_eq!(Accel::Auto.resolve(None), Ok(Accel::Kvm));
        assert_eq!(Accel::Auto.resolve(Some("no".into())), Ok(Accel::Tcg));
        assert_eq!(Accel::Tcg.resolve(None), Ok(Accel::Tcg));
        let e = Accel::Kvm
            .resolve(Some("/dev/kvm does not open: No such file".into()))
            .unwrap_err();
        assert_eq!(e, "--accel kvm: /dev/kvm does not open: No such file");
    }

    #[test]
    fn a_missing_device_is_a_problem() {
        let p = kvm_problem(Path::new("/nonexistent/kvm")).expect("a problem");
        assert!(p.starts_with("/nonexistent/kvm does not open"), "{p}");
    }

    #[test]
    fn kvm_records_are_marked_real_cores_and_survive_the_jsonl() {
        use crate::bench::{parse_log, read_jsonl, tables, Boot};
        let line = r#"BENCH {"bench":"slub_list_lock","case":"linux_default","metric":"ops_per_cpu","value":5,"unit":"ops_per_sec","cpus":2,"nodes":2,"clock":"tsc"}"#;
        let (mut records, _) = parse_log(line, Boot::Tsc);
        assert_eq!(records.len(), 1);
        assert!(!tables(&records, 2).contains("real cores"));
        assert!(records[0].to_json().get("accel").is_none());
        records[0].kvm = true;
        let jsonl = format!("{}\n", records[0].to_json());
        assert!(jsonl.contains(r#""accel":"kvm""#), "{jsonl}");
        let (_, back) = read_jsonl(&jsonl).expect("a valid JSONL");
        assert!(back[0].kvm);
        assert!(tables(&back, 2).contains("real cores (KVM)"));
    }

    #[test]
    fn under_kvm_only_the_host_time_boots_leave_tcg() {
        use crate::bench::Boot;
        use crate::cli::{parse, Request};
        let words = "bench --accel kvm --topology 2node --smp 2 --set bench=slub_list_lock";
        let Ok(Request::Bench(o)) = parse(words.split(' ')) else {
            panic!("not a bench command line");
        };
        let mut args = crate::run::BenchArgs::from_options(o);
        // Whatever host runs the test: its CPU count is not this test's business.
        args.base.host.placement.oversubscribe = true;
        let plan = crate::run::plan::plan(&args).unwrap();
        let mut seen = Vec::new();
        for b in &plan.boots {
            let args = b.config.qemu_args(Path::new("numalab.img")).unwrap();
            let kvm = args.windows(2).any(|w| w == ["-accel", "kvm"]);
            let icount = args.iter().any(|a| a == "-icount");
            match b.boot {
                Boot::Tsc | Boot::Uma => assert!(kvm && !icount, "{:?}: {args:?}", b.boot),
                Boot::Det | Boot::Icount => assert!(!kvm && icount, "{:?}: {args:?}", b.boot),
            }
            assert_eq!(b.config.runs_on(), if kvm { "kvm" } else { "tcg" });
            seen.push(b.boot);
        }
        assert!(
            seen.contains(&Boot::Tsc) && seen.contains(&Boot::Det),
            "{seen:?}"
        );
        // The exact boots are the TCG run's, argument for argument: their counts are the same.
        let Ok(Request::Bench(o)) = parse(words.replace("--accel kvm ", "").split(' ')) else {
            panic!("not a bench command line");
        };
        let tcg = crate::run::plan::plan(&crate::run::BenchArgs::from_options(o)).unwrap();
        let exact = |p: &crate::run::Plan| -> Vec<(Vec<String>, String)> {
            p.boots
                .iter()
                .filter(|b| b.boot.deterministic())
                .map(|b| {
                    let args = b.config.qemu_args(Path::new("numalab.img")).unwrap();
                    (args, b.config.kernel_cmdline())
                })
                .collect()
        };
        assert_eq!(exact(&plan), exact(&tcg));
        assert!(!exact(&tcg).is_empty());
    }

    #[test]
    fn kvm_internal_errors_are_recognised() {
        let dump = "KVM internal error. Suberror: 1\nemulation failure\nRAX=0000000000000000";
        assert_eq!(kvm_stop_line(dump), Some("KVM internal error. Suberror: 1"));
        assert_eq!(
            kvm_stop_line("KVM: entry failed, hardware error 0x80000021\n"),
            Some("KVM: entry failed, hardware error 0x80000021")
        );
        assert_eq!(
            kvm_stop_line("qemu-system-x86_64: warning: TSC unstable\n"),
            None
        );
    }

    /// A stall as the runner saw it: QEMU alive, the guest stopped, no CPU used. A
    /// stand-in QEMU prints KVM's internal error and then waits as QEMU 7.2 does; the run ends
    /// at once with that line (before this, it waited for the wall-clock cap: 20 x --timeout).
    #[test]
    fn a_guest_kvm_stopped_ends_the_run_with_kvm_s_line() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("numalab-kvm-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("qemu-system-x86_64");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho 'KVM internal error. Suberror: 1' >&2\n\
             echo 'emulation failure' >&2\nexec sleep 600\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = crate::qemu::RunConfig::new("2node", numalab_algo::options::Suite::Test);
        c.host.accel = Accel::Kvm;
        c.host.placement.oversubscribe = true;
        c.host.qemu = Some(fake);
        c.host.timeout = std::time::Duration::from_secs(60);
        let out = crate::qemu::boot(&c, &dir.join("numalab.img"));
        let _ = std::fs::remove_dir_all(&dir);
        match &out.verdict {
            crate::qemu::Verdict::QemuError(why) => assert!(
                why.starts_with("KVM stopped the guest (KVM internal error. Suberror: 1)"),
                "{why}"
            ),
            other => panic!("{other:?}: {}", out.stderr),
        }
        assert!(out.stderr.contains("emulation failure"), "{}", out.stderr);
    }

    #[test]
    fn icount_boots_stay_on_tcg() {
        assert_eq!(qemu_args(Accel::Kvm, true), ["-cpu", "max"]);
        assert_eq!(qemu_args(Accel::Tcg, false), ["-cpu", "max"]);
        let kvm = qemu_args(Accel::Kvm, false);
        assert_eq!(kvm[..3], ["-accel", "kvm", "-cpu"]);
        assert!(kvm[3].starts_with("host"));
        assert_eq!(runs_on(Accel::Kvm, true), "tcg");
        assert_eq!(runs_on(Accel::Kvm, false), "kvm");
    }
}
