//! From the parsed command line to what the runner runs: the steps that look at the host.
//! `cli::parse` only parses; this reads a `--machine` source and writes the ACPI tables its
//! replay needs (docs/replay.md), and checks `--mem` against the host's RAM and swap.

use crate::cli::{Job, MachineSource};
use crate::machine::{replay, scale};

/// The job `job` asks for, with its machine read and planned, or `Job::Error` (exit 2) when
/// the host cannot serve it.
pub fn resolve(job: Job) -> Job {
    if let Some(why) =
        mem_of(&job).and_then(|mib| scale::mem_problem(mib, scale::host_backing_mib()))
    {
        return Job::Error(format!("--mem: {why}"));
    }
    match job {
        Job::Machine(mut config, m) => match prepare(&m) {
            Ok((plan, mut args)) => {
                args.append(&mut config.extra);
                config.extra = args;
                Job::Replay(config, Box::new(plan))
            }
            Err(e) => Job::Error(e),
        },
        Job::Bench(mut b) => {
            let Some(source) = b.machine.machine.take() else {
                return Job::Bench(b);
            };
            let m = MachineSource {
                source,
                smp: b.machine.smp,
                mem: b.machine.mem,
                qemu_args: Vec::new(),
            };
            match prepare(&m) {
                Ok((plan, mut args)) => {
                    // bench has no replay check of its own: its notes are printed here.
                    for note in &plan.notes {
                        eprintln!("numalab: {note}");
                    }
                    args.append(&mut b.machine.qemu_args);
                    b.machine.qemu_args = args;
                    Job::Bench(b)
                }
                Err(e) => Job::Error(e),
            }
        }
        other => other,
    }
}

/// The replay of `m`: its plan and QEMU arguments, or the one-line reason it cannot be used.
fn prepare(m: &MachineSource) -> Result<(scale::Plan, Vec<String>), String> {
    replay::prepare(&m.source, m.smp, m.mem, &m.qemu_args, &replay::tables_dir())
        .map_err(|e| format!("--machine: {e}"))
}

/// The memory a job asks QEMU for, if `--mem` gave it.
fn mem_of(job: &Job) -> Option<u64> {
    match job {
        Job::Main(c) | Job::Run(c) => c.mem_mib,
        Job::Machine(_, m) => m.mem,
        Job::Bench(b) => b.machine.mem,
        Job::Soak(s) => s.machine.mem,
        Job::Topology(_) | Job::Replay(..) | Job::Error(_) => None,
    }
}
