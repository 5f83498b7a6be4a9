//! The progress line while a plan's boots run: which boot of how many, the experiment and
//! case the kernel reports (`# bench progress: EXP CASE N%`), the time elapsed and an estimate
//! of what is left. On a terminal it is one line redrawn in place; piped (CI, a log file) it is
//! one plain line per boot and nothing per percent. Everything else the runner prints while a
//! boot runs goes through [`println`] so that it never lands in the middle of the line.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

struct State {
    /// Whether stdout is a terminal (the line is redrawn in place).
    tty: bool,
    /// Whether a progress line is drawn now (a terminal only).
    drawn: bool,
    started: Option<Instant>,
    /// Boots planned, and finished so far (with their total time).
    total: usize,
    done: usize,
    done_time: Duration,
    /// The boot running now: its number (1-based), when it started and what it is.
    boot: usize,
    boot_started: Option<Instant>,
    what: String,
    /// The kernel's last progress report in this boot.
    kernel: String,
}

static STATE: Mutex<State> = Mutex::new(State {
    tty: false,
    drawn: false,
    started: None,
    total: 0,
    done: 0,
    done_time: Duration::ZERO,
    boot: 0,
    boot_started: None,
    what: String::new(),
    kernel: String::new(),
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `m:ss`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

/// The estimate of the time left: the mean time of the finished boots times the boots not yet
/// finished, less what the running one has taken (never below zero); None before the first
/// boot finished (nothing to estimate from).
pub fn estimate_left(
    done: usize,
    done_time: Duration,
    total: usize,
    running_for: Duration,
) -> Option<Duration> {
    if done == 0 {
        return None;
    }
    let mean = done_time / done as u32;
    let left = mean * (total.saturating_sub(done)) as u32;
    Some(left.saturating_sub(running_for.min(mean)))
}

impl State {
    fn line(&self) -> String {
        let now = Instant::now();
        let elapsed = self.started.map_or(Duration::ZERO, |s| now - s);
        let running_for = self.boot_started.map_or(Duration::ZERO, |b| now - b);
        let left = estimate_left(self.done, self.done_time, self.total, running_for)
            .map_or("estimate after the first boot".to_string(), |d| {
                format!("~{} left", clock(d))
            });
        let kernel = if self.kernel.is_empty() {
            String::new()
        } else {
            format!(": {}", self.kernel)
        };
        format!(
            "numalab: boot {}/{} {}{kernel} ({} elapsed, {left})",
            self.boot,
            self.total,
            self.what,
            clock(elapsed)
        )
    }

    fn clear(&mut self, out: &mut impl Write) {
        if self.drawn {
            let _ = write!(out, "\r\x1b[2K");
            self.drawn = false;
        }
    }

    fn draw(&mut self, out: &mut impl Write) {
        if self.tty {
            let mut line = self.line();
            line.truncate(terminal_width().saturating_sub(1));
            let _ = write!(out, "\r\x1b[2K{line}");
            let _ = out.flush();
            self.drawn = true;
        }
    }
}

/// The terminal's width from `COLUMNS`, else 120.
fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(120)
}

/// A plan of `total` boots starts now.
pub fn start(total: usize) {
    let mut s = state();
    s.tty = std::io::stdout().is_terminal();
    s.started = Some(Instant::now());
    s.total = total;
    s.done = 0;
    s.done_time = Duration::ZERO;
}

/// The next boot of the plan, described by `what`, starts: a plain line when piped, the
/// redrawn line on a terminal.
pub fn boot(what: &str) {
    let mut s = state();
    s.boot = s.done + 1;
    s.total = s.total.max(s.boot);
    s.boot_started = Some(Instant::now());
    s.what = what.to_string();
    s.kernel.clear();
    let mut out = std::io::stdout().lock();
    if s.tty {
        s.draw(&mut out);
    } else {
        let _ = writeln!(out, "{}", s.line());
    }
}

/// A planned boot is not run (its condition did not hold): one fewer to wait for.
pub fn skipped() {
    let mut s = state();
    s.total = s.total.saturating_sub(1).max(s.done);
}

/// The running boot finished after `took`.
pub fn boot_done(took: Duration) {
    let mut s = state();
    s.done += 1;
    s.done_time += took;
}

/// A `# bench progress: ...` line of the kernel's (the text after the prefix): redraws the
/// line on a terminal, nothing when piped.
pub fn kernel_says(text: &str) {
    let mut s = state();
    s.kernel = text.trim().to_string();
    if s.tty {
        s.draw(&mut std::io::stdout().lock());
    }
}

/// The plan ended: the line is cleared.
pub fn finish() {
    let mut s = state();
    s.clear(&mut std::io::stdout().lock());
    s.started = None;
}

/// A kernel line the runner shows while a plan runs (a warning no test declared, a failed
/// test): printed as [`println`] does, after the running boot's name (`[uma boot] ...`), so
/// that a line from one of several boots says which.
pub fn kernel_line(text: &str) {
    let boot = {
        let s = state();
        (s.started.is_some() && !s.what.is_empty())
            .then(|| s.what.split(' ').next().unwrap_or("").to_string())
    };
    match boot {
        Some(b) => println(&format!("[{b} boot] {text}")),
        None => println(text),
    }
}

/// Prints `text` (a whole line, with its newline) without breaking the progress line: clears
/// it, prints, redraws it.
pub fn println(text: &str) {
    let mut s = state();
    let mut out = std::io::stdout().lock();
    s.clear(&mut out);
    let _ = write!(out, "{text}");
    if !text.ends_with('\n') {
        let _ = writeln!(out);
    }
    if s.started.is_some() {
        s.draw(&mut out);
    }
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_comes_from_the_finished_boots() {
        let s = Duration::from_secs;
        assert_eq!(estimate_left(0, s(0), 5, s(3)), None);
        // Two boots took 20 s each; three are left, the running one 5 s in: 60 - 5.
        assert_eq!(estimate_left(2, s(40), 5, s(5)), Some(s(55)));
        // A boot running longer than the mean does not make the estimate negative.
        assert_eq!(estimate_left(2, s(40), 3, s(90)), Some(s(0)));
        assert_eq!(clock(s(125)), "2:05");
    }

    #[test]
    fn the_line_names_the_boot_the_kernel_report_and_the_times() {
        let st = State {
            tty: false,
            drawn: false,
            started: Some(Instant::now()),
            total: 5,
            done: 0,
            done_time: Duration::ZERO,
            boot: 1,
            boot_started: None,
            what: "tsc (suite=all, smoke)".into(),
            kernel: "alloc_peers numalab/random 40%".into(),
        };
        let line = st.line();
        assert!(
            line.starts_with(
                "numalab: boot 1/5 tsc (suite=all, smoke): alloc_peers numalab/random 40% (0:00 elapsed"
            ),
            "{line}"
        );
        assert!(line.ends_with("estimate after the first boot)"), "{line}");
    }
}
