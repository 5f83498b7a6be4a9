//! The `numactl -H` block the kernel prints at boot (kernel/src/topology.rs, written by
//! crate::formats::numactl, which also reads the whole block back): here, where the block
//! stands among the console's other lines.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// What starts the block's first line (`available: N nodes (LIST)`).
pub const AVAILABLE: &str = "available: ";

/// The block's lines in `lines` (the first block, at column 0): from `available: N nodes` to
/// the last distance row (1 + 3 N + 2 + N lines). None when there is none or it is cut short.
pub fn block<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<Vec<String>> {
    let mut lines = lines.into_iter().skip_while(|l| !l.starts_with(AVAILABLE));
    let first = lines.next()?;
    let n: usize = first[AVAILABLE.len()..].split(' ').next()?.parse().ok()?;
    let mut block: Vec<String> = alloc::vec![first.to_string()];
    block.extend(lines.take(3 * n + 2 + n).map(|l| l.to_string()));
    let last_row = alloc::format!("{}:", n.saturating_sub(1));
    (block.len() == 1 + 3 * n + 2 + n && block.last()?.trim_start().starts_with(&last_row))
        .then_some(block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::numactl::{Numactl, NumactlNode};

    #[test]
    fn the_written_block_is_found_among_other_lines() {
        let n = Numactl {
            nodes: alloc::vec![NumactlNode {
                id: 0,
                cpus: alloc::vec![0],
                size_mib: 1,
                free_mib: 1
            }],
            distances: alloc::vec![alloc::vec![10]],
        };
        let written = n.lines();
        let mut console = alloc::vec![String::from("numalab booting")];
        console.extend(written.iter().cloned());
        console.push(String::from("KTAP version 1"));
        assert_eq!(
            block(console.iter().map(|s| s.as_str())),
            Some(written.clone())
        );
        assert_eq!(
            block(written[..written.len() - 1].iter().map(|s| s.as_str())),
            None
        );
        assert_eq!(block(["boot"]), None);
    }
}
