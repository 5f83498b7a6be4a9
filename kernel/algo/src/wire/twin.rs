//! Lines of the Linux twin's console that the host reads besides the twin module's own
//! (which use numalab's formats: `BENCH`, `# bench:`, `# trace`): SLUB's report of a cache
//! destroyed with objects still allocated, `BUG CACHE (...): Objects remaining on
//! __kmem_cache_shutdown()` (Linux's mm/slub.c, not written here).

/// What Linux's SLUB says when a cache still holds allocated objects at destroy.
pub const OBJECTS_REMAINING: &str = ": Objects remaining on __kmem_cache_shutdown()";
/// What starts SLUB's report line (after any indentation).
pub const BUG: &str = "BUG ";

/// The cache of an objects-remaining line (`?` when the line names none), or None when the
/// line is not one.
pub fn objects_remaining(line: &str) -> Option<&str> {
    if !line.contains(OBJECTS_REMAINING) {
        return None;
    }
    Some(
        line.trim_start()
            .strip_prefix(BUG)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("?"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn reads_slubs_line() {
        let l = format!(
            "[ 1.0] {BUG}numalab_x (Tainted: G): Objects remaining on __kmem_cache_shutdown()"
        );
        assert_eq!(objects_remaining(&l), Some("?"));
        let l = format!("{BUG}numalab_x (Tainted: G){OBJECTS_REMAINING}");
        assert_eq!(objects_remaining(&l), Some("numalab_x"));
        assert_eq!(objects_remaining("BUG numalab_x: other"), None);
    }
}
