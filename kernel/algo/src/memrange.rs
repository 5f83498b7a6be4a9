//! Physical range arithmetic for building allocators: intersect a node's ranges with usable
//! RAM, cut out reserved ranges, round to whole pages, carve a region off the top.

use alloc::vec::Vec;

/// A physical [start, end) byte range.
pub type Range = (u64, u64);

/// Sorts and merges overlapping or touching [start, end) ranges; drops empty ones.
pub fn normalize(ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = ranges.iter().copied().filter(|(s, e)| s < e).collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The parts of `a` that are also in `b`.
pub fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let (a, b) = (normalize(a), normalize(b));
    let mut out = Vec::new();
    for &(s1, e1) in &a {
        for &(s2, e2) in &b {
            let (s, e) = (s1.max(s2), e1.min(e2));
            if s < e {
                out.push((s, e));
            }
        }
    }
    normalize(&out)
}

/// The parts of `a` that are in none of `cut`.
pub fn subtract(a: &[(u64, u64)], cut: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let cut = normalize(cut);
    let mut out = Vec::new();
    for (s, e) in normalize(a) {
        let mut start = s;
        for &(cs, ce) in &cut {
            if ce <= start || cs >= e {
                continue;
            }
            if cs > start {
                out.push((start, cs));
            }
            start = start.max(ce);
            if start >= e {
                break;
            }
        }
        if start < e {
            out.push((start, e));
        }
    }
    out
}

/// Shrinks each range inward to whole `page_bytes` pages; drops ranges with no whole page.
pub fn page_align_inward(ranges: &[(u64, u64)], page_bytes: u64) -> Vec<(u64, u64)> {
    ranges
        .iter()
        .map(|&(s, e)| {
            (
                s.div_ceil(page_bytes) * page_bytes,
                e / page_bytes * page_bytes,
            )
        })
        .filter(|(s, e)| s < e)
        .collect()
}

/// Takes `size_bytes` (a multiple of `align`) from the top of the highest range that can hold
/// it, aligned to `align`; returns the region and the ranges without it.
pub fn carve_top(
    ranges: &[(u64, u64)],
    size_bytes: u64,
    align: u64,
) -> Option<(Range, Vec<Range>)> {
    let region = ranges.iter().rev().find_map(|&(s, e)| {
        let start = (e.checked_sub(size_bytes)?) / align * align;
        (start >= s).then_some((start, start + size_bytes))
    })?;
    Some((region, subtract(ranges, &[region])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn intersect_and_subtract() {
        let node = [(0, 0x2000_0000)];
        let usable = [
            (0x1000, 0x9f000),
            (0x10_0000, 0x1000_0000),
            (0x1800_0000, 0x3000_0000),
        ];
        let r = intersect(&node, &usable);
        assert_eq!(
            r,
            vec![
                (0x1000, 0x9f000),
                (0x10_0000, 0x1000_0000),
                (0x1800_0000, 0x2000_0000)
            ]
        );
        let r = subtract(&r, &[(0, 0x10_0000), (0x40_0000, 0x60_0000)]);
        assert_eq!(
            r,
            vec![
                (0x10_0000, 0x40_0000),
                (0x60_0000, 0x1000_0000),
                (0x1800_0000, 0x2000_0000)
            ]
        );
        assert_eq!(subtract(&[(0, 10)], &[(0, 10)]), vec![]);
        assert_eq!(
            subtract(&[(0, 10)], &[(2, 3), (5, 20)]),
            vec![(0, 2), (3, 5)]
        );
        assert_eq!(normalize(&[(5, 8), (0, 5), (9, 9)]), vec![(0, 8)]);
    }

    #[test]
    fn align_and_carve() {
        assert_eq!(
            page_align_inward(&[(1, 8193), (4096, 8000)], 4096),
            vec![(4096, 8192)]
        );
        let (region, rest) =
            carve_top(&[(0, 0x10000), (0x20000, 0x23000)], 0x4000, 0x1000).unwrap();
        assert_eq!(region, (0xc000, 0x10000));
        assert_eq!(rest, vec![(0, 0xc000), (0x20000, 0x23000)]);
        assert!(carve_top(&[(0, 0x1000)], 0x2000, 0x1000).is_none());
    }
}
