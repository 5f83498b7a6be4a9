//! What a build is doing, while it runs: cargo's JSON messages (`--message-format=json`) of the
//! kernel build turned into one line per crate compiled (`numalab: building the kernel
//! (ktest): 12 crates compiled, the last core (0:41 elapsed)`), and one line per disk image
//! (on a terminal only). On a terminal (stderr) the line is redrawn in place, as the boots'
//! progress line is (progress.rs); piped, each is a plain line. A build with nothing to
//! compile prints nothing. Written to stderr with `write_all`, not `eprintln!`, so
//! that a test binary (which captures `eprintln!`) still shows a fresh clone's first build.

use std::io::{IsTerminal, Write};
use std::time::Instant;

/// The progress of one build (the kernel, with its features, or an image).
pub struct BuildProgress {
    what: String,
    tty: bool,
    drawn: bool,
    compiled: usize,
    /// The crate compiled last.
    last: String,
    started: Instant,
}

/// The crate a cargo JSON message says was compiled now (not fresh): `core`, `numalab-kernel`.
/// None for anything else (fresh artifacts, build scripts, diagnostics, the final
/// `build-finished`, text that is not JSON).
pub fn compiled_crate(message: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(message).ok()?;
    let reason = v.get("reason")?.as_str()?;
    match reason {
        "compiler-artifact" if v.get("fresh")?.as_bool() == Some(false) => {
            let target = v.get("target")?;
            let kinds = target.get("kind")?.as_array()?;
            if kinds.iter().any(|k| k.as_str() == Some("custom-build")) {
                return None;
            }
            Some(target.get("name")?.as_str()?.to_string())
        }
        _ => None,
    }
}

impl BuildProgress {
    /// A build of `what` (e.g. `the kernel (ktest)`) starts; nothing is printed yet.
    pub fn new(what: &str) -> Self {
        BuildProgress {
            what: what.to_string(),
            tty: std::io::stderr().is_terminal(),
            drawn: false,
            compiled: 0,
            last: String::new(),
            started: Instant::now(),
        }
    }

    fn line(&self) -> String {
        if self.compiled == 0 {
            return format!(
                "numalab: building {} ({} elapsed)",
                self.what,
                crate::progress::clock(self.started.elapsed())
            );
        }
        format!(
            "numalab: building {}: {} crate{} compiled, the last {} ({} elapsed)",
            self.what,
            self.compiled,
            if self.compiled == 1 { "" } else { "s" },
            self.last,
            crate::progress::clock(self.started.elapsed())
        )
    }

    /// Writes `text`: over the drawn line on a terminal (kept drawn unless `newline`), as a
    /// line of its own when piped.
    fn write(&mut self, text: &str, newline: bool) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = err.write_all(b"\r\x1b[2K");
        }
        let _ = err.write_all(text.as_bytes());
        if newline || !self.tty {
            let _ = err.write_all(b"\n");
            self.drawn = false;
        } else {
            self.drawn = true;
        }
        let _ = err.flush();
    }

    /// One line of cargo's stdout under `--message-format=json`: a crate compiled now is a
    /// new line (redrawn in place on a terminal).
    pub fn message(&mut self, json: &str) {
        if let Some(name) = compiled_crate(json) {
            self.compiled += 1;
            self.last = name;
            let line = self.line();
            self.write(&line, false);
        }
    }

    /// On a terminal, redraws the line with its elapsed time (every second while cargo
    /// works), so a long crate does not look like a hang; nothing when piped.
    pub fn tick(&mut self) {
        if self.tty {
            let line = self.line();
            self.write(&line, false);
        }
    }

    /// The build ended: when anything was compiled, one closing line says how many crates and
    /// how long (over the redrawn line on a terminal).
    pub fn finish(&mut self) {
        if self.compiled > 0 {
            let line = format!(
                "numalab: built {}: {} crate{} in {}",
                self.what,
                self.compiled,
                if self.compiled == 1 { "" } else { "s" },
                crate::progress::clock(self.started.elapsed())
            );
            self.write(&line, true);
        } else if self.drawn {
            // Only ticks were drawn (nothing to compile): the line goes.
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(b"\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

/// One line for a step that is not a crate (`numalab: building the bios image`, seconds), on
/// a terminal only (stderr): piped, the runner's output stays as it was.
pub fn step(text: &str) {
    let mut err = std::io::stderr().lock();
    if err.is_terminal() {
        let _ = writeln!(err, "numalab: {text}");
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::compiled_crate;

    #[test]
    fn compiled_crates_are_named_and_fresh_ones_are_not() {
        let core = r#"{"reason":"compiler-artifact","package_id":"path+file:///usr/lib/rustlib/src/rust/library/core#0.0.0","target":{"kind":["lib"],"name":"core"},"fresh":false}"#;
        assert_eq!(compiled_crate(core).as_deref(), Some("core"));
        let kernel = r#"{"reason":"compiler-artifact","package_id":"path+file:///x/kernel#numalab-kernel@0.1.0","target":{"kind":["bin"],"name":"numalab-kernel"},"fresh":false}"#;
        assert_eq!(compiled_crate(kernel).as_deref(), Some("numalab-kernel"));
        let fresh = kernel.replace("\"fresh\":false", "\"fresh\":true");
        assert_eq!(compiled_crate(&fresh), None);
        let script = r#"{"reason":"compiler-artifact","package_id":"registry+https://github.com/rust-lang/crates.io-index#bootloader@0.11.14","target":{"kind":["custom-build"],"name":"build-script-build"},"fresh":false}"#;
        assert_eq!(compiled_crate(script), None);
        assert_eq!(
            compiled_crate(r#"{"reason":"build-finished","success":true}"#),
            None
        );
        assert_eq!(compiled_crate("error: not json"), None);
    }
}
