//! The lock_stat block on the console: each line of the table (crate::formats::lock_stat's
//! writer) after [`PREFIX`] and a space (an empty table line is the prefix alone). The kernel
//! prints it after its bench suite (kernel/src/bench/lock_stat.rs); the host cuts the last
//! block out ([`Block`]) and reads it with crate::formats::lock_stat's reader.

use alloc::string::String;

/// The prefix of every line of the block.
pub const PREFIX: &str = "# lock_stat:";

/// One table line as the console carries it.
pub fn line(table_line: &str) -> String {
    if table_line.is_empty() {
        String::from(PREFIX)
    } else {
        alloc::format!("{PREFIX} {table_line}")
    }
}

/// Reads a console line: the table line it carries, or None when it is not a block line.
pub fn parse(line: &str) -> Option<&str> {
    let rest = line.trim_end_matches(['\r', '\n']).strip_prefix(PREFIX)?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// Collects blocks line by line: a block starts at a version line and ends at the first line
/// that is not a block line; the last block wins.
#[derive(Clone, Debug, Default)]
pub struct Block {
    current: Option<String>,
    found: Option<String>,
}

impl Block {
    /// Takes the next console line.
    pub fn feed(&mut self, console_line: &str) {
        match (parse(console_line), self.current.as_mut()) {
            (Some(r), _) if r.trim_start() == crate::formats::lock_stat::VERSION_LINE => {
                if let Some(done) = self.current.take() {
                    self.found = Some(done);
                }
                let mut text = String::from(crate::formats::lock_stat::VERSION_LINE);
                text.push('\n');
                self.current = Some(text);
            }
            (Some(r), Some(text)) => {
                text.push_str(r);
                text.push('\n');
            }
            (None, Some(_)) => self.found = self.current.take(),
            _ => {}
        }
    }

    /// The last block's table text (each line followed by `\n`), or None.
    pub fn finish(self) -> Option<String> {
        self.current.or(self.found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::lock_stat::{write, LockCounts, LockStatRow, Unit};

    #[test]
    fn a_table_round_trips_through_the_console() {
        let rows = [LockStatRow::new("a", Some(1), &LockCounts::default())];
        let table = write(&rows, Unit::Instructions, true);
        let mut b = Block::default();
        b.feed("boot\n");
        for l in &table {
            b.feed(&line(l));
        }
        b.feed("ok 1 bench");
        let mut want = table.join("\n");
        want.push('\n');
        assert_eq!(b.finish().unwrap(), want);
        assert_eq!(line(""), PREFIX);
        assert_eq!(parse("# lock_stat:\r"), Some(""));
        assert_eq!(parse("# lock_stats: x"), None);
    }
}
