//! Knobs that only some designs read: `slub.cpu_partial` is the partial and hybrid designs',
//! the sheaf knobs are the sheaves and hybrid designs' (`slub.sheaves_caches` hybrid's alone,
//! `slub.sheaves_any_node` the sheaves design's alone), `frame.pcp_high`/`frame.pcp_batch` need `frame.pcp=1`. A
//! knob given while the chosen design (given or default) ignores it is an error naming both,
//! never a value silently read as nothing. Host (`--set`, sweep axes) and kernel
//! (its `options` test) check the same table.

use super::{find, parse_value};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// A knob and the design option whose values read it.
pub struct Needs {
    pub knob: &'static str,
    pub design: &'static str,
    /// The values of `design` under which `knob` is read.
    pub read_under: &'static [&'static str],
    /// The knob's values that need `design` (empty: every value).
    pub values: &'static [&'static str],
    /// What the knob tunes, for the message.
    pub what: &'static str,
}

/// Every knob that one design alone reads.
pub const NEEDS: &[Needs] = &[
    Needs {
        knob: "slub.cpu_partial",
        design: "slub.design",
        read_under: &["partial", "hybrid"],
        what: "per-CPU partial slabs",
        values: &[],
    },
    Needs {
        knob: "slub.sheaf_capacity",
        design: "slub.design",
        read_under: &["sheaves", "hybrid"],
        what: "sheaves",
        values: &[],
    },
    Needs {
        knob: "slub.sheaves_caches",
        design: "slub.design",
        read_under: &["hybrid"],
        what: "opt-in sheaves",
        values: &[],
    },
    Needs {
        knob: "slub.sheaves_memoryless",
        design: "slub.design",
        read_under: &["sheaves", "hybrid"],
        what: "barns",
        values: &[],
    },
    Needs {
        knob: "slub.sheaves_any_node",
        design: "slub.design",
        read_under: &["sheaves"],
        what: "sheaf refills from other nodes",
        values: &[],
    },
    Needs {
        knob: "frame.pcp_high",
        design: "frame.pcp",
        read_under: &["1"],
        what: "per-CPU page lists",
        values: &[],
    },
    Needs {
        knob: "frame.pcp_batch",
        design: "frame.pcp",
        read_under: &["1"],
        what: "per-CPU page lists",
        values: &[],
    },
    Needs {
        knob: "rcu.kfree",
        design: "slub.design",
        read_under: &["sheaves", "hybrid"],
        what: "sheaves to hold an rcu_free sheaf",
        values: &["sheaf"],
    },
];

/// The value `key` has among `words` (`KEY=VALUE`, the last one wins), or None.
fn given<'a>(words: &[&'a str], key: &str) -> Option<&'a str> {
    words
        .iter()
        .rev()
        .find_map(|w| w.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
}

/// Whether `a` and `b` are the same value of option `key` (`off` and `0` of a bool are).
fn same_value(key: &str, a: &str, b: &str) -> bool {
    match find(key) {
        Some(spec) => match (parse_value(spec, a), parse_value(spec, b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        },
        None => a == b,
    }
}

/// One message per knob among `words` that the chosen design does not read: the knob as
/// given, the design as chosen (or its default), and the design values that read it.
pub fn ignored_knobs(words: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for n in NEEDS {
        let Some(value) = given(words, n.knob) else {
            continue;
        };
        if !n.values.is_empty() && !n.values.iter().any(|v| same_value(n.knob, v, value)) {
            continue;
        }
        let default = find(n.design).map_or("", |s| s.default);
        let (design, how) = match given(words, n.design) {
            Some(d) => (d, ""),
            None => (default, " (the default)"),
        };
        if n.read_under.iter().any(|v| same_value(n.design, v, design)) {
            continue;
        }
        let wanted: Vec<String> = n
            .read_under
            .iter()
            .map(|v| format!("{}={}", n.design, v))
            .collect();
        out.push(format!(
            "option {}={} is ignored under {}={}{}: that design has no {}; set {} with {}",
            n.knob,
            value,
            n.design,
            design,
            how,
            n.what,
            n.knob,
            wanted.join(" or ")
        ));
    }
    out
}
