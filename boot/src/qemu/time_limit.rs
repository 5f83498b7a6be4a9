//! A boot's time limit counted in QEMU's own CPU time, so that a loaded host makes a boot
//! slower but never fails it: `--timeout S` allows S seconds of the boot's busy threads,
//! `S x min(threads, host cores)` CPU-seconds in all (a quiet host spends them in about S
//! seconds of wall time), and a guest that stops using the CPU altogether (every vCPU halted
//! for good) is killed after `WALL_CAP_FACTOR x S` of wall time.
//!
//! The CPU time is the QEMU process's user + system time from /proc/PID/stat (all threads).
//! Where /proc cannot be read the limit falls back to S of wall time, as before.

use std::time::Duration;

/// Wall time, in multiples of `--timeout`, after which a boot is killed even when QEMU has
/// not used its CPU budget (a guest halted for good uses none). 20x: on a 2-core host under
/// a load of 17 a single-threaded boot gets about 1/8.5 of a core.
pub const WALL_CAP_FACTOR: u32 = 20;

/// /proc's clock ticks per second (USER_HZ, 100 on every Linux architecture numalab runs on).
const USER_HZ: f64 = 100.0;

/// The limit of one boot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit {
    /// `--timeout`.
    pub timeout: Duration,
    /// QEMU CPU time allowed.
    pub cpu_budget: Duration,
    /// Wall time after which the boot is killed whatever its CPU time.
    pub wall_cap: Duration,
}

/// Why a boot was stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Exceeded {
    /// QEMU used its CPU budget.
    Cpu(Duration),
    /// The wall-time cap passed (or /proc is unreadable and `timeout` passed).
    Wall,
}

impl Limit {
    /// The limit of a boot whose busy threads are `threads` (1 under icount: QEMU then runs
    /// every vCPU on one thread) on a host of `cores`.
    pub fn new(timeout: Duration, threads: u32, cores: usize) -> Limit {
        let parallel = (threads as usize).min(cores).max(1) as u32;
        Limit {
            timeout,
            // Saturating: `--timeout` at its largest (u64::MAX seconds) means no limit.
            cpu_budget: timeout.saturating_mul(parallel),
            wall_cap: timeout.saturating_mul(WALL_CAP_FACTOR),
        }
    }

    /// Whether a boot that has run `wall` and used `cpu` (None: unknown) must stop.
    pub fn exceeded(&self, wall: Duration, cpu: Option<Duration>) -> Option<Exceeded> {
        match cpu {
            Some(cpu) if cpu >= self.cpu_budget => Some(Exceeded::Cpu(cpu)),
            Some(_) if wall >= self.wall_cap => Some(Exceeded::Wall),
            Some(_) => None,
            None if wall >= self.timeout => Some(Exceeded::Wall),
            None => None,
        }
    }
}

/// The CPU time (user + system, all threads) process `pid` has used, or None where
/// /proc/PID/stat cannot be read or parsed.
pub fn process_cpu_time(pid: u32) -> Option<Duration> {
    parse_stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// utime + stime from a /proc/PID/stat line (fields 14 and 15; the command name, field 2,
/// is in parentheses and may hold spaces, so fields are counted after its last `)`).
fn parse_stat_cpu(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state): utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_secs_f64((utime + stime) as f64 / USER_HZ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_follows_the_busy_threads_and_the_cores() {
        let s = Duration::from_secs(300);
        assert_eq!(Limit::new(s, 1, 2).cpu_budget, s);
        assert_eq!(Limit::new(s, 8, 2).cpu_budget, s * 2);
        assert_eq!(Limit::new(s, 8, 16).cpu_budget, s * 8);
        assert_eq!(Limit::new(s, 0, 0).cpu_budget, s);
        assert_eq!(Limit::new(s, 1, 2).wall_cap, s * WALL_CAP_FACTOR);
        // --timeout at its largest: no overflow, no limit reached.
        let max = Duration::from_secs(u64::MAX);
        assert_eq!(Limit::new(max, 8, 16).cpu_budget, Duration::MAX);
        assert_eq!(Limit::new(max, 8, 16).exceeded(s, Some(s)), None);
    }

    #[test]
    fn a_slow_host_is_not_a_timeout_but_a_spent_budget_or_a_halted_guest_is() {
        let l = Limit::new(Duration::from_secs(10), 1, 2);
        let secs = Duration::from_secs;
        // Ten times the wall time with a third of the CPU: still running.
        assert_eq!(l.exceeded(secs(100), Some(secs(3))), None);
        assert_eq!(
            l.exceeded(secs(100), Some(secs(10))),
            Some(Exceeded::Cpu(secs(10)))
        );
        assert_eq!(l.exceeded(secs(200), Some(secs(1))), Some(Exceeded::Wall));
        // No /proc: wall time as before.
        assert_eq!(l.exceeded(secs(9), None), None);
        assert_eq!(l.exceeded(secs(10), None), Some(Exceeded::Wall));
    }

    #[test]
    fn stat_lines_parse_after_the_command_name() {
        let line = "4242 (qemu-system-x86 (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    1234 566 0 0 20 0 9 0 100 1000 10 18446744073709551615";
        assert_eq!(parse_stat_cpu(line), Some(Duration::from_secs(18)));
        assert_eq!(parse_stat_cpu("garbage"), None);
        assert_eq!(parse_stat_cpu("1 (x) S 1 2"), None);
        let me = process_cpu_time(std::process::id()).expect("this process's own stat");
        assert!(me < Duration::from_secs(100_000), "{me:?}");
    }
}
