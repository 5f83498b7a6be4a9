//! The command line of `qemu-run.sh` (and of `cargo run -p numalab-boot`).

use crate::image::Firmware;
use crate::presets;
use crate::qemu::RunConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Exit codes of the runner.
pub mod exit {
    /// Every in-kernel test passed.
    pub const PASS: i32 = 0;
    /// A test failed, the kernel panicked or faulted, or no test ran.
    pub const FAIL: i32 = 1;
    /// Bad command line (the usage is printed).
    pub const USAGE: i32 = 2;
    /// The kernel or an image could not be built.
    pub const BUILD: i32 = 3;
    /// QEMU or its firmware is missing, or QEMU itself failed.
    pub const QEMU: i32 = 4;
    /// The run passed its `--timeout` and was killed.
    pub const TIMEOUT: i32 = 124;
}

pub fn usage() -> String {
    let mut s = String::from(
        "usage: qemu-run.sh [OPTIONS] [-- QEMU ARGS...]
       qemu-run.sh                   main job: tests, stress and smoke benchmarks on 4node, tables
       qemu-run.sh bench [...]       benchmarks: tables, JSONL and charts (bench --help)
       qemu-run.sh test              run every test (cargo test: host unit tests and QEMU boots)

Builds the kernel, boots it under QEMU on a NUMA topology and runs an in-kernel suite.

options:
  --topology NAME    NUMA machine preset (default 4node; see below)
  --smp N            number of CPUs (spread over the preset's nodes that have CPUs)
  --mem SIZE         memory, e.g. 2G or 512M (spread over the nodes that have memory)
  --uefi             boot the UEFI image with OVMF (default: BIOS)
  --suite NAME       test | stress | bench | all (default: all)
  --set KEY=VALUE    kernel option, repeatable (see docs/running.md: kernel options)
  --timeout SECONDS  kill QEMU after this long and report a timeout (default 600)
  --icount           add -icount shift=0,sleep=off: guest rdtsc counts instructions exactly
  --qemu PATH        QEMU binary to use (e.g. DIR/qemu of a QEMU bundle, docs/running.md)
  --log FILE         keep the serial log in FILE
  --quiet            do not echo the serial console (the log is still shown on failure)
  -h, --help         this text
  -- ARGS...         appended to QEMU's arguments; if they contain -smp, -m, -numa or
                     -object memory-backend-*, the preset's machine description is dropped

exit status: 0 all tests passed; 1 a test failed, the kernel panicked or no test ran;
             2 bad usage; 3 build failed; 4 QEMU missing or failed; 124 timeout

topologies:
",
    );
    for p in presets::all() {
        s.push_str(&format!("  {:<11} {}\n", p.name, p.about));
    }
    s
}

/// Parses `512M`, `2G`, `1024` (MiB) into MiB.
pub fn parse_mem_mib(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mul) = match t.chars().last()? {
        'G' | 'g' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .map(|n| n * mul)
        .filter(|&m| m >= 64)
}

/// Parses the run options (everything after an optional subcommand).
pub fn parse_run(args: &[String]) -> Result<RunConfig, String> {
    let mut config = RunConfig::new("4node", "all");
    config.timeout = Duration::from_secs(600);
    config.echo = true;
    let mut i = 0;
    let value = |i: &mut usize, name: &str| -> Result<String, String> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("{name} needs a value"))
    };
    while i < args.len() {
        let arg = args[i].as_str();
        match arg {
            "--uefi" => config.firmware = Firmware::Uefi,
            "--icount" => config.icount = true,
            "--quiet" => config.echo = false,
            "--topology" => {
                let name = value(&mut i, arg)?;
                config.topology =
                    presets::find(&name).ok_or_else(|| format!("unknown topology '{name}'"))?;
            }
            "--smp" => {
                let v = value(&mut i, arg)?;
                let n: u32 = v.parse().map_err(|_| format!("--smp: bad number '{v}'"))?;
                if !(1..=255).contains(&n) {
                    return Err(format!("--smp: {n} is outside 1..=255 (the TCG limit)"));
                }
                config.smp = Some(n);
            }
            "--mem" => {
                let v = value(&mut i, arg)?;
                config.mem_mib = Some(parse_mem_mib(&v).ok_or_else(|| {
                    format!("--mem: bad size '{v}' (e.g. 2G, 512M; at least 64M)")
                })?);
            }
            "--set" => {
                let v = value(&mut i, arg)?;
                if !v.contains('=') || v.starts_with('=') {
                    return Err(format!("--set: expected key=value, got '{v}'"));
                }
                config.sets.push(v);
            }
            "--suite" => {
                let v = value(&mut i, arg)?;
                if !["test", "stress", "bench", "all"].contains(&v.as_str()) {
                    return Err(format!(
                        "--suite: unknown suite '{v}' (test, stress, bench, all)"
                    ));
                }
                config.suite = v;
            }
            "--timeout" => {
                let v = value(&mut i, arg)?;
                let s: u64 = v
                    .parse()
                    .map_err(|_| format!("--timeout: bad number '{v}'"))?;
                config.timeout = Duration::from_secs(s.max(1));
            }
            "--qemu" => config.qemu = Some(PathBuf::from(value(&mut i, arg)?)),
            "--log" => config.log = Some(PathBuf::from(value(&mut i, arg)?)),
            "--" => {
                config.extra = args[i + 1..].to_vec();
                break;
            }
            other => return Err(format!("unknown option '{other}'")),
        }
        i += 1;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_options() {
        let c = parse_run(&args("--uefi --smp 16 --mem 4G --topology snc --set a=1 --set b=2 --suite test --icount -- -smp 2")).unwrap();
        assert_eq!(c.firmware, Firmware::Uefi);
        assert_eq!(c.smp, Some(16));
        assert_eq!(c.mem_mib, Some(4096));
        assert_eq!(c.topology.name, "snc");
        assert_eq!(c.cmdline(), "suite=test a=1 b=2");
        assert!(c.icount);
        assert_eq!(c.extra, vec!["-smp", "2"]);
        assert!(c.user_describes_machine());
    }

    #[test]
    fn rejects_bad_input() {
        for bad in [
            "--bogus",
            "--smp 0",
            "--smp x",
            "--mem 1K",
            "--topology nope",
            "--set novalue",
            "--suite fast",
            "--smp",
        ] {
            assert!(parse_run(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn user_machine_drops_preset() {
        let c = parse_run(&args("-- -numa node,nodeid=0")).unwrap();
        let a = c
            .qemu_args(std::path::Path::new("x.img"))
            .unwrap()
            .join(" ");
        assert!(!a.contains("-smp"));
        assert!(a.ends_with("-numa node,nodeid=0"));
    }
}
