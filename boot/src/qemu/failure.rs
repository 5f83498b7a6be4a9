//! The report of a failed boot: why (a timeout with the host's load and QEMU's CPU time, a
//! cut-short KTAP log, failed tests, undeclared warnings), the exact QEMU command, its stderr
//! and the whole serial log.

use crate::qemu::{Outcome, Verdict};

/// Unexpected warnings a failure report shows (the rest are counted).
const REPORT_WARNINGS: usize = 10;

impl Outcome {
    /// A report for a failed run: why, the exact command, and the whole serial log.
    pub fn failure_report(&self) -> String {
        let mut out = match (&self.verdict, &self.host_load_at_timeout) {
            (Verdict::Timeout, Some(load)) => format!(
                "numalab: run failed: timed out after {:.0} s (host load {load}{}); the kernel \
                 had not finished, which on a loaded host is not a wrong result\n",
                self.elapsed.as_secs_f64(),
                self.cpu_at_timeout
                    .map_or(String::new(), |(cpu, l)| format!(
                        "; QEMU used {:.0} of its {:.0} CPU-seconds, wall cap {:.0} s",
                        cpu.as_secs_f64(),
                        l.cpu_budget.as_secs_f64(),
                        l.wall_cap.as_secs_f64()
                    ))
            ),
            (Verdict::Incomplete(errors), _) => format!(
                "numalab: run failed: QEMU said success but the KTAP log is not whole (cut \
                 short?): {}\n",
                errors.join("; ")
            ),
            (Verdict::OutOfMemory(line), _) => {
                format!("numalab: run failed: the guest ran out of memory: {line}\n")
            }
            (verdict, _) => format!("numalab: run failed: {verdict:?}\n"),
        };
        for f in self.boot_log.ktap.failed() {
            out.push_str(&format!(
                "numalab: failed test: {} # {}\n",
                f.name, f.reason
            ));
        }
        let unexpected = self.boot_log.unexpected_warnings();
        for w in unexpected.iter().take(REPORT_WARNINGS) {
            out.push_str(&format!("numalab: unexpected warning: {w}\n"));
        }
        if unexpected.len() > REPORT_WARNINGS {
            out.push_str(&format!(
                "numalab: ... and {} more unexpected warnings\n",
                unexpected.len() - REPORT_WARNINGS
            ));
        }
        out.push_str(&format!("numalab: QEMU command: {}\n", self.command));
        if !self.stderr.trim().is_empty() {
            out.push_str(&format!(
                "numalab: QEMU stderr:\n{}\n",
                self.stderr.trim_end()
            ));
        }
        out.push_str("numalab: ---- serial log ----\n");
        out.push_str(&self.log);
        out.push_str("numalab: ---- end of serial log ----\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::qemu::{verdict_of, Verdict, STATUS_FAILURE, STATUS_SUCCESS};
    use crate::wire::BootLog;

    const WHOLE: &str = "KTAP version 1\n1..1\n    # Subtest: bench\n    1..2\n    ok 1 bench.a\n    ok 2 bench.b\nok 1 bench\n";

    #[test]
    fn a_log_cut_short_is_not_a_pass_even_when_qemu_says_success() {
        let whole = BootLog::parse(WHOLE).ktap;
        assert_eq!(
            verdict_of(Some(Some(STATUS_SUCCESS)), &whole, 0, ""),
            Verdict::Pass
        );
        // The Linux 7 twin's console once stopped after the fifth of six cases (its printk
        // kthread was not drained before the exit): QEMU's status said success.
        let cut = BootLog::parse(
            "KTAP version 1\n1..1\n    # Subtest: bench\n    1..2\n    ok 1 bench.a\n",
        )
        .ktap;
        let v = verdict_of(Some(Some(STATUS_SUCCESS)), &cut, 0, "");
        let Verdict::Incomplete(errors) = &v else {
            panic!("{v:?}")
        };
        assert!(
            errors
                .iter()
                .any(|e| e.contains("plan Some(2) but 1 cases")),
            "{errors:?}"
        );
        assert_eq!(crate::cli::exit::of(&v), crate::cli::exit::FAIL);
        assert_eq!(
            verdict_of(Some(Some(STATUS_FAILURE)), &cut, 0, ""),
            Verdict::Fail
        );
        assert_eq!(verdict_of(None, &whole, 0, ""), Verdict::Timeout);
        assert_eq!(
            verdict_of(Some(Some(STATUS_SUCCESS)), &whole, 2, ""),
            Verdict::UnexpectedWarnings(2)
        );
    }
}
