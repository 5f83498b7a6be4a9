//! Bounded warnings: a list inside one warning shows its first [`MAX_LISTED`] items and counts
//! the rest, and each table gives at most [`MAX_LINES_PER_TABLE`] warning lines, so a huge or
//! hostile table (a 1023-node asymmetric SLIT, 100000 duplicate MADT entries) cannot make the
//! boot print, or keep, megabytes of text.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{Display, Write};

/// Items a list inside one warning shows before "... and K more".
pub const MAX_LISTED: usize = 16;
/// Warning lines one table (MADT, SRAT, SLIT) may give; the rest are counted in one line.
pub const MAX_LINES_PER_TABLE: usize = 32;

/// The first [`MAX_LISTED`] items joined by `sep`, then `sep` and "... and K more" when there
/// are more. Items past the cap are counted, never formatted.
pub fn capped_join<T: Display>(items: impl IntoIterator<Item = T>, sep: &str) -> String {
    capped_join_by(items, sep, |out, item| {
        // Writing to a String cannot fail.
        let _ = write!(out, "{item}");
    })
}

/// [`capped_join`] with the text of each shown item written by `show`: the items are plain
/// data (indices, pairs), so the ones past the cap cost a count, not a string.
pub fn capped_join_by<T>(
    items: impl IntoIterator<Item = T>,
    sep: &str,
    mut show: impl FnMut(&mut String, T),
) -> String {
    let mut out = String::new();
    let mut more = 0usize;
    for (i, item) in items.into_iter().enumerate() {
        if i >= MAX_LISTED {
            more += 1;
            continue;
        }
        if i > 0 {
            out.push_str(sep);
        }
        show(&mut out, item);
    }
    if more > 0 {
        let _ = write!(out, "{sep}... and {more} more");
    }
    out
}

/// The table a warning line is about: its first word ("MADT", "SRAT", "SLIT"), up to a space
/// or colon.
fn table_of(line: &str) -> &str {
    let end = line.find([' ', ':']).unwrap_or(line.len());
    &line[..end]
}

/// Keeps the first [`MAX_LINES_PER_TABLE`] lines of each table, in order, and replaces the
/// rest of that table's lines by one "TABLE: K more warnings not shown" line placed after its
/// last kept line.
pub fn cap_per_table(warnings: Vec<String>) -> Vec<String> {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for w in &warnings {
        *count.entry(String::from(table_of(w))).or_default() += 1;
    }
    if count.values().all(|&c| c <= MAX_LINES_PER_TABLE) {
        return warnings;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for w in warnings {
        let table = String::from(table_of(&w));
        let total = count.get(&table).copied().unwrap_or(0);
        let n = seen.entry(table.clone()).or_default();
        *n += 1;
        if *n <= MAX_LINES_PER_TABLE {
            out.push(w);
            if *n == MAX_LINES_PER_TABLE && total > MAX_LINES_PER_TABLE {
                out.push(format!(
                    "{table}: {} more warnings not shown (at most {MAX_LINES_PER_TABLE} per table)",
                    total - MAX_LINES_PER_TABLE
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn lists_are_capped() {
        assert_eq!(capped_join([1, 2, 3], " "), "1 2 3");
        assert_eq!(capped_join(Vec::<u8>::new(), " "), "");
        let long = capped_join(0..1000, ", ");
        assert!(long.starts_with("0, 1, ") && long.ends_with(", 15, ... and 984 more"));
    }

    #[test]
    fn lines_are_capped_per_table() {
        let short = vec![String::from("SRAT: a"), String::from("SLIT: b")];
        assert_eq!(cap_per_table(short.clone()), short);
        let mut many: Vec<String> = (0..40).map(|i| format!("MADT entry {i}: dup")).collect();
        many.insert(3, String::from("SRAT: one"));
        many.push(String::from("SLIT: last"));
        let out = cap_per_table(many);
        assert_eq!(out.len(), 32 + 1 + 1 + 1);
        assert_eq!(out[3], "SRAT: one");
        assert_eq!(out[32], "MADT entry 31: dup");
        assert_eq!(
            out[33],
            "MADT: 8 more warnings not shown (at most 32 per table)"
        );
        assert_eq!(out[34], "SLIT: last");
    }
}
