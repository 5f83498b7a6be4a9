//! KTAP version 1 lines (the format of Linux's KUnit and kselftest), written by the kernel.

use alloc::format;
use alloc::string::String;

/// How one test ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
}

/// Running totals, printed as KUnit's `# Totals:` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub pass: u32,
    pub fail: u32,
    pub skip: u32,
}

impl Totals {
    pub fn add(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail(_) => self.fail += 1,
            Outcome::Skip(_) => self.skip += 1,
        }
    }

    pub fn total(&self) -> u32 {
        self.pass + self.fail + self.skip
    }

    /// `# Totals: pass:N fail:N skip:N total:N`.
    pub fn line(&self) -> String {
        format!(
            "# Totals: pass:{} fail:{} skip:{} total:{}",
            self.pass,
            self.fail,
            self.skip,
            self.total()
        )
    }
}

/// Keeps a reason on one line (KTAP directives end at the newline).
fn one_line(reason: &str) -> String {
    reason.replace('\n', " | ")
}

/// `ok N name`, `not ok N name # reason` or `ok N name # SKIP reason`.
pub fn result_line(number: usize, name: &str, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => format!("ok {} {}", number, name),
        Outcome::Fail(reason) => format!("not ok {} {} # {}", number, name, one_line(reason)),
        Outcome::Skip(reason) => format!("ok {} {} # SKIP {}", number, name, one_line(reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(result_line(1, "a", &Outcome::Pass), "ok 1 a");
        assert_eq!(
            result_line(2, "b", &Outcome::Fail("x\ny".into())),
            "not ok 2 b # x | y"
        );
        assert_eq!(
            result_line(3, "c", &Outcome::Skip("why".into())),
            "ok 3 c # SKIP why"
        );
        let mut t = Totals::default();
        t.add(&Outcome::Pass);
        t.add(&Outcome::Fail(String::new()));
        assert_eq!(t.line(), "# Totals: pass:1 fail:1 skip:0 total:2");
    }
}
