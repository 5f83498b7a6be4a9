//! `numalab-boot`: the runner behind qemu-run.sh (build, boot, report, exit status).

use numalab_boot::build::image;
use numalab_boot::cli::{self, exit};
use numalab_boot::machine::{self, replay, scale::Plan};
use numalab_boot::resolve::Job;
use numalab_boot::run::{self, BenchArgs};
use numalab_boot::{qemu, RunConfig, Verdict};

fn main() {
    // SIGINT, SIGTERM, SIGHUP: stop every QEMU, exit 128 + the signal (interrupt.rs).
    numalab_boot::qemu::interrupt::install();
    // Errors and -h/--help: clap prints them and exits (2 for a bad command line, 0 for help).
    let request = cli::parse(std::env::args_os().skip(1)).unwrap_or_else(|e| e.exit());
    let job = match numalab_boot::resolve::resolve(request) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("qemu-run.sh: {e}");
            std::process::exit(exit::USAGE);
        }
    };
    std::process::exit(match job {
        // Tests, stress and smoke benchmarks, then the short soak, then where the
        // results went.
        Job::Main(base, verbose) => run::main_job(base, verbose),
        // One command, two kernels: numalab's boots and the Linux twin's are one plan
        // (run/plan.rs), run and reported together; --compare reads two result files.
        Job::Bench(options) => run::run_bench(&BenchArgs::from_options(options)),
        Job::Run(config) => boot_and_report(&config, None),
        Job::Replay(config, plan) => {
            for note in &plan.notes {
                eprintln!("numalab: {note}");
            }
            boot_and_report(&config, Some(&plan))
        }
        Job::Topology(source) => {
            machine::topology_command(&source, &mut std::io::stdout(), &mut std::io::stderr())
        }
        Job::Soak(options) => numalab_boot::run::soak::run_soak(&options),
        Job::Sweep(options) => numalab_boot::sweep::run_sweep(&options),
        Job::Merge(options) => numalab_boot::sweep::merge_command(&options),
    });
}

/// One boot: build, run, report (with `--machine`, the kernel's numactl -H checked against
/// the replayed machine: a mismatch fails the run); returns the exit status.
fn boot_and_report(config: &RunConfig, replayed: Option<&Plan>) -> i32 {
    let built = image::build_kernel().and_then(|k| image::build_image(&k, config.machine.firmware));
    let img = match built {
        Ok(i) => i,
        Err(e) => {
            eprintln!("numalab: {e}");
            return exit::BUILD;
        }
    };
    if config.host.accel != numalab_boot::qemu::accel::Accel::Tcg {
        println!("numalab: accel: {}", config.runs_on());
    }
    let mut outcome = qemu::boot(config, &img);
    // A kernel that never ran (QEMU refused the machine) printed no numactl block to compare:
    // its failure is QEMU's, reported as such, not a replay mismatch.
    let kernel_ran = !matches!(outcome.verdict, Verdict::QemuError(_));
    if let Some(plan) = replayed.filter(|_| kernel_ran) {
        match replay::check(
            plan,
            &outcome.log,
            replay::Slack::for_firmware(config.machine.firmware),
        ) {
            Ok(line) => println!("numalab: replay: {line}"),
            Err(mismatches) => {
                for m in &mismatches {
                    eprintln!("numalab: replay mismatch: {m}");
                }
                if outcome.verdict == Verdict::Pass {
                    outcome.verdict = Verdict::Fail;
                }
            }
        }
    }
    let t = &outcome.boot_log.ktap;
    match &outcome.verdict {
        Verdict::Pass => {
            println!(
                "numalab: PASS: {} tests passed, {} skipped ({:.1} s)",
                t.passed(),
                t.results.iter().filter(|r| r.skipped).count(),
                outcome.elapsed.as_secs_f64()
            );
            exit::PASS
        }
        verdict => {
            eprint!("{}", outcome.failure_report());
            exit::of(verdict)
        }
    }
}
