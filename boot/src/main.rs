//! `numalab-boot`: the runner behind qemu-run.sh (build, boot, report, exit status).

use numalab_boot::cli::{self, exit};
use numalab_boot::{bench_run, image, qemu, Verdict};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // No arguments: the main job (every suite with the smoke benchmarks, then the tables).
    if args.is_empty() {
        std::process::exit(bench_run::run(&bench_run::main_job_args()));
    }
    if args[0] == "bench" {
        let rest = &args[1..];
        if rest.iter().any(|a| a == "-h" || a == "--help") && !rest.iter().any(|a| a == "--") {
            print!("{}", bench_run::usage());
            std::process::exit(exit::PASS);
        }
        match bench_run::parse(rest) {
            Ok(a) => std::process::exit(bench_run::run(&a)),
            Err(e) => {
                eprintln!("qemu-run.sh: {e}\n");
                eprint!("{}", bench_run::usage());
                std::process::exit(exit::USAGE);
            }
        }
    }
    if args.iter().any(|a| a == "-h" || a == "--help") && !args.iter().any(|a| a == "--") {
        print!("{}", cli::usage());
        std::process::exit(exit::PASS);
    }
    let config = match cli::parse_run(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("qemu-run.sh: {e}\n");
            eprint!("{}", cli::usage());
            std::process::exit(exit::USAGE);
        }
    };
    let built = image::build_kernel().and_then(|k| image::build_image(&k, config.firmware));
    let img = match built {
        Ok(i) => i,
        Err(e) => {
            eprintln!("numalab: {e}");
            std::process::exit(exit::BUILD);
        }
    };
    let outcome = qemu::run(&config, &img);
    let t = &outcome.ktap;
    match &outcome.verdict {
        Verdict::Pass => {
            println!(
                "numalab: PASS: {} tests passed, {} skipped ({:.1} s)",
                t.passed(),
                t.results.iter().filter(|r| r.skipped).count(),
                outcome.elapsed.as_secs_f64()
            );
            std::process::exit(exit::PASS);
        }
        verdict => {
            eprint!("{}", outcome.failure_report());
            let code = match verdict {
                Verdict::Timeout => exit::TIMEOUT,
                Verdict::QemuError(_) => exit::QEMU,
                _ => exit::FAIL,
            };
            std::process::exit(code);
        }
    }
}
