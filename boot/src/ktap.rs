//! Reads what the kernel printed: KTAP results, the `# Totals:` line, panics and exceptions.

/// One KTAP result line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResult {
    pub number: u32,
    pub name: String,
    pub ok: bool,
    pub skipped: bool,
    /// Text after `#`, if any.
    pub reason: String,
}

/// Everything the host checks in a serial log.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub planned: Option<u32>,
    pub results: Vec<TestResult>,
    pub panicked: bool,
    pub exception: bool,
}

impl Summary {
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.ok && !r.skipped).count()
    }

    pub fn failed(&self) -> Vec<&TestResult> {
        self.results.iter().filter(|r| !r.ok).collect()
    }

    pub fn result(&self, name: &str) -> Option<&TestResult> {
        self.results.iter().find(|r| r.name == name)
    }
}

fn parse_result(line: &str) -> Option<TestResult> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix("not ok ") {
        (false, rest)
    } else if let Some(rest) = line.strip_prefix("ok ") {
        (true, rest)
    } else {
        return None;
    };
    let (head, reason) = match rest.split_once(" # ") {
        Some((h, r)) => (h, r.trim().to_string()),
        None => (rest, String::new()),
    };
    let (number, name) = head.split_once(' ')?;
    let number = number.parse().ok()?;
    let skipped = reason.starts_with("SKIP");
    Some(TestResult {
        number,
        name: name.trim().to_string(),
        ok,
        skipped,
        reason,
    })
}

/// Parses a whole serial log.
pub fn parse(log: &str) -> Summary {
    let mut summary = Summary::default();
    for line in log.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(plan) = line.strip_prefix("1..") {
            summary.planned = plan.trim().parse().ok();
        } else if let Some(result) = parse_result(line) {
            summary.results.push(result);
        } else if line.starts_with("PANIC:") {
            summary.panicked = true;
        } else if line.starts_with("EXCEPTION:") {
            summary.exception = true;
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ktap() {
        let log = "banner\nKTAP version 1\n1..3\nok 1 options.valid\nnot ok 2 ktest.deliberate_failure # x.rs:3: boom\nok 3 a.b # SKIP no smp\n# Totals: pass:1 fail:1 skip:1 total:3\n";
        let s = parse(log);
        assert_eq!(s.planned, Some(3));
        assert_eq!(s.results.len(), 3);
        assert_eq!(s.passed(), 1);
        assert_eq!(s.failed()[0].name, "ktest.deliberate_failure");
        assert_eq!(s.failed()[0].reason, "x.rs:3: boom");
        assert!(s.result("a.b").unwrap().skipped);
    }
}
