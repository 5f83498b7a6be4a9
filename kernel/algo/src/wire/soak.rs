//! The soak's console lines (kernel/src/soak): every one starts with [`PREFIX`]; the last,
//! `# soak: done: SUMMARY`, says it finished (the host prints SUMMARY).

use core::fmt;

/// What starts every soak line.
pub const PREFIX: &str = "# soak: ";
/// What starts the soak's last line.
pub const DONE: &str = "# soak: done: ";

/// A soak line to print: `# soak: ` then the text (`println!("{}", Line(format_args!(..)))`).
pub struct Line<T>(pub T);

impl<T: fmt::Display> fmt::Display for Line<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", self.0)
    }
}

/// A soak line read back: the whole line trimmed, or None when it is no soak line.
pub fn parse(line: &str) -> Option<&str> {
    let line = line.trim();
    line.starts_with(PREFIX).then_some(line)
}

/// The summary of a done line (a line [`parse`] returned), or None for another soak line.
pub fn done(soak_line: &str) -> Option<&str> {
    soak_line.strip_prefix(DONE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn soak_lines_read_back() {
        let l = format!("{}", Line(format_args!("done: {} operations", 3)));
        assert_eq!(l, "# soak: done: 3 operations");
        let padded = format!("  {l}\r");
        let read = parse(&padded).unwrap();
        assert_eq!(done(read), Some("3 operations"));
        let mix = format!("{}", Line("mix: a"));
        assert_eq!(parse(&mix), Some("# soak: mix: a"));
        assert_eq!(done("# soak: mix: a"), None);
        assert_eq!(parse("# soaked: x"), None);
    }
}
