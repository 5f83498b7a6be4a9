//! Kernel options: the table of every `key=value` the kernel accepts, split by component, and
//! the parser both sides use (the kernel on its fw_cfg command line, the host on `--set`).
//!
//! Each component declares its options in its own file with [`declare!`]: a typed handle per
//! option (`slub::SLUB_MAX_ORDER: Opt<u64>`) and one [`Group`] holding the specs. [`GROUPS`]
//! lists the groups in the order the boot log describes them; test hooks and benchmark knobs
//! have groups of their own (`test`, `bench`, `soak`), apart from the production knobs.
//!
//! The host checks every `--set KEY=VALUE` with [`check_word`] before it builds or boots
//! anything, so a misspelt key or a bad value is one line naming the key, what it accepts and
//! the closest known key; the kernel parses the same table again ([`Options::parse`]) and its
//! `options.valid` test fails on anything the host let through (raw `-fw_cfg` arguments).

mod choice;
mod cmdline;
mod design;
mod parse;
mod value;

pub mod bench;
pub mod fault;
pub mod frame;
pub mod kfree_rcu;
pub mod rcu;
pub mod run;
pub mod slub;
pub mod smp;
pub mod soak;
pub mod sync;
#[cfg(feature = "ktest")]
pub mod test;
pub mod test_vmalloc;
pub mod vmalloc;

pub use choice::Choice;
pub(crate) use choice::{accepts_choice, choice, read_choice};
pub use cmdline::{Cmdline, Setting};
pub use design::{ignored_knobs, Needs, NEEDS};
pub use parse::{parse_value, Options, Value};
pub use run::Suite;
pub use value::{AutoOr, CacheNames, Opt, OptType, ParsedValue, Render, SlubDebug, Word};

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// What values an option accepts.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// `0`/`1` (also `off`/`on`, `false`/`true`).
    Bool,
    /// An unsigned integer in `min..=max` (decimal, or hex with `0x`).
    U64 { min: u64, max: u64 },
    /// A keyword (`auto`, `none`) or an unsigned integer in `min..=max`.
    KeywordOr {
        keyword: &'static str,
        min: u64,
        max: u64,
    },
    /// One word out of a fixed list.
    Choice(&'static [&'static str]),
    /// A value with a syntax of its own, checked by its component's parser (the type's
    /// [`ParsedValue`] implementation): fault attributes, SLUB debug flags.
    Parsed {
        syntax: &'static str,
        check: fn(&str) -> Result<(), String>,
    },
    /// Any word (a filter).
    Text,
}

impl Kind {
    /// What the kind accepts, in words, for error messages.
    pub fn accepted(&self) -> String {
        match self {
            Kind::Bool => String::from("0 or 1"),
            Kind::U64 { min, max } => format!("integer {}..={}", min, max),
            Kind::KeywordOr { keyword, min, max } => {
                format!("{} or an integer {}..={}", keyword, min, max)
            }
            Kind::Choice(choices) => choices.join(", "),
            Kind::Parsed { syntax, .. } => String::from(*syntax),
            Kind::Text => String::from("any word"),
        }
    }
}

/// One known option.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub key: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub help: &'static str,
}

/// The options of one component.
#[derive(Clone, Copy)]
pub struct Group {
    /// The component: `slub`, `frame`, `test`, ...
    pub name: &'static str,
    pub specs: &'static [Spec],
    /// Each handle's check: its type matches its kind and its default parses.
    pub checks: &'static [fn() -> Result<(), String>],
}

/// Declares a component's options once: a typed handle `NAME: TYPE = Spec {..};` per option
/// (TYPE is what the value reads as: bool, u64, Word (free text), a [`choice!`] enum,
/// AutoOr<u64>, Option<u64> for `none`, or a [`ParsedValue`] type) and the component's
/// [`Group`] named `$group`.
macro_rules! declare {
    ($group:ident = $name:literal; $($handle:ident: $type:ty = $spec:expr;)*) => {
        $(pub const $handle: $crate::options::Opt<$type> = $crate::options::Opt::new($spec);)*

        /// Every option of this component, as the table lists them.
        pub const $group: $crate::options::Group = $crate::options::Group {
            name: $name,
            specs: &[$($handle.spec,)*],
            checks: &[$(|| $handle.check(),)*],
        };
    };
}
pub(crate) use declare;

/// Every component's options, in the order the boot log describes them; the `test` group
/// (test hooks) only with the `ktest` feature (the host, the kernel's ktest images): a
/// production kernel has no test hooks.
pub const GROUPS: &[Group] = &[
    run::RUN,
    smp::SMP,
    sync::SYNC,
    frame::FRAME,
    slub::SLUB,
    vmalloc::VMALLOC,
    rcu::RCU,
    kfree_rcu::KFREE_RCU,
    fault::FAULT,
    soak::SOAK,
    bench::BENCH_GROUP,
    test_vmalloc::TEST_VMALLOC,
    #[cfg(feature = "ktest")]
    test::TEST,
];

/// What an unknown key's message adds in a production kernel: the test hooks are not there.
#[cfg(not(feature = "ktest"))]
const NO_TEST_HOOKS: &str =
    "; this kernel was built without the ktest feature, so it has no test hooks (group test)";
#[cfg(feature = "ktest")]
const NO_TEST_HOOKS: &str = "";

/// Every spec of every group, in [`GROUPS`] order (the table the command line is parsed
/// against).
pub fn all_specs() -> Vec<Spec> {
    GROUPS
        .iter()
        .flat_map(|g| g.specs.iter().copied())
        .collect()
}

/// The spec of `key`.
pub fn find(key: &str) -> Option<&'static Spec> {
    GROUPS
        .iter()
        .flat_map(|g| g.specs.iter())
        .find(|s| s.key == key)
}

/// Edit distance (insertions, deletions, substitutions) between two keys.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The known key closest to `key`, when it is close enough to be a likely misspelling (at
/// most a third of its characters differ, at least 2 allowed).
pub fn closest_key(key: &str) -> Option<&'static str> {
    let (d, best) = GROUPS
        .iter()
        .flat_map(|g| g.specs.iter())
        .map(|s| (distance(key, s.key), s.key))
        .min()?;
    (d <= (key.len() / 3).max(2)).then_some(best)
}

/// The message for an unknown `key`: the closest key with what it accepts, or every key.
pub fn unknown_key_message(key: &str) -> String {
    match closest_key(key).and_then(find) {
        Some(spec) => format!(
            "unknown kernel option '{}': did you mean '{}' ({})?{}",
            key,
            spec.key,
            spec.kind.accepted(),
            NO_TEST_HOOKS
        ),
        None => {
            let known: Vec<&str> = GROUPS
                .iter()
                .flat_map(|g| g.specs.iter().map(|s| s.key))
                .collect();
            format!(
                "unknown kernel option '{}' (valid keys: {}){}",
                key,
                known.join(", "),
                NO_TEST_HOOKS
            )
        }
    }
}

/// Checks one `KEY=VALUE` word against the table: Ok, or one line saying what is wrong (no
/// `=`, an unknown key with the closest known one, or a bad value with what is accepted).
pub fn check_word(word: &str) -> Result<(), String> {
    // The kernel's command line is split at whitespace: a value holding any would reach the
    // kernel as two options, the second never checked here.
    if let Some(c) = word.chars().find(|c| c.is_whitespace() || c.is_control()) {
        let shown: String = word.chars().take(80).collect();
        return Err(format!(
            "option {:?}: holds whitespace or a control character ({:?}): the kernel's \
             command line is split at whitespace, so it would arrive as more than one option; \
             give each option its own --set",
            shown, c
        ));
    }
    let Some((key, text)) = word.split_once('=') else {
        return Err(format!("option '{}': expected KEY=VALUE", word));
    };
    match find(key) {
        None => Err(unknown_key_message(key)),
        Some(spec) => parse_value(spec, text).map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_handle_matches_its_kind_and_keys_are_unique() {
        let mut keys: Vec<&str> = Vec::new();
        for g in GROUPS {
            assert_eq!(g.specs.len(), g.checks.len(), "group {}", g.name);
            for check in g.checks {
                check().unwrap();
            }
            for s in g.specs {
                assert!(!keys.contains(&s.key), "{} declared twice", s.key);
                keys.push(s.key);
            }
        }
        assert_eq!(keys.len(), all_specs().len());
        // A choice handle whose spec default is not its enum's #[default] is caught.
        let mut spec = slub::SLUB_DESIGN.spec;
        spec.default = "partial";
        let e = Opt::<crate::slub::Design>::new(spec).check().unwrap_err();
        assert!(e.contains("#[default]"), "{e}");
        let mut spec = slub::SLUB_DESIGN.spec;
        spec.kind = Kind::Choice(&["partial", "sheaves"]);
        assert!(Opt::<crate::slub::Design>::new(spec).check().is_err());
    }

    #[test]
    fn a_misspelt_key_names_the_closest_key_and_what_it_accepts() {
        let e = check_word("slub.min_partal=64").unwrap_err();
        assert!(e.contains("'slub.min_partal'"), "{e}");
        assert!(e.contains("did you mean 'slub.min_partial'"), "{e}");
        assert!(e.contains("auto or an integer"), "{e}");
        // Nothing close: every key is listed.
        let e = check_word("zzzzzzzzzzzzzzzzzz=1").unwrap_err();
        assert!(e.contains("valid keys: suite, filter"), "{e}");
        assert!(check_word("slub.min_partial=64").is_ok());
        assert!(check_word("slub.min_partial=auto").is_ok());
        assert!(check_word("novalue")
            .unwrap_err()
            .contains("expected KEY=VALUE"));
    }

    #[test]
    fn bad_values_say_what_is_accepted() {
        let e = check_word("slub.max_order=11").unwrap_err();
        assert!(e.contains("0..=10"), "{e}");
        let e = check_word("slub.min_partial=lots").unwrap_err();
        assert!(e.contains("auto or an integer"), "{e}");
        let e = check_word("fault.slab=200").unwrap_err();
        assert!(e.contains("fault.slab") && e.contains("above 100"), "{e}");
        let e = check_word("slub.debug=FQ").unwrap_err();
        assert!(e.contains("'Q'") && e.contains("F, Z, P, U"), "{e}");
        let e = check_word("smp.hold_apic=two").unwrap_err();
        assert!(e.contains("none or an integer"), "{e}");
        let e = check_word("vmalloc.nodes=tree").unwrap_err();
        assert!(e.contains("global, cpu, numa"), "{e}");
        for ok in [
            "fault.slab=5,1,42",
            "fault.page_alloc=0",
            "slub.debug=FZPU,kmalloc-64",
            "slub.debug=",
            "smp.hold_apic=2",
            "smp.hold_apic=none",
            "filter=slub",
        ] {
            assert!(check_word(ok).is_ok(), "{ok}: {:?}", check_word(ok));
        }
    }

    #[test]
    fn a_value_with_whitespace_cannot_smuggle_a_second_option() {
        // The kernel splits its command line at whitespace, so a value
        // holding a space, a tab or a newline would arrive as two words, the second one
        // (here an out-of-range slub.max_order) never checked by the host.
        for word in [
            "filter=slub slub.max_order=99",
            "filter=slub\tslub.max_order=99",
            "filter=slub\nslub.max_order=99",
            "fault.slab=5 slub.max_order=99",
            "filter=a\u{0}b",
        ] {
            let e = check_word(word).unwrap_err();
            assert!(
                e.contains("whitespace or a control character"),
                "{word:?}: {e}"
            );
            assert!(!e.contains('\n'), "one line: {e:?}");
        }
        // The kernel's own parse of such a line flags the smuggled option.
        let o = Options::parse("filter=slub slub.max_order=99", &all_specs());
        assert!(
            o.errors.iter().any(|e| e.contains("slub.max_order")),
            "{:?}",
            o.errors
        );
    }

    #[test]
    fn a_knob_the_chosen_design_does_not_have_is_an_error_naming_both() {
        // slub.cpu_partial under slub.design=sheaves (the default) was
        // accepted and silently meant nothing.
        let o = Options::parse("slub.cpu_partial=5", &all_specs());
        assert!(
            o.errors
                .iter()
                .any(|e| e.contains("slub.cpu_partial=5") && e.contains("slub.design=sheaves")),
            "{:?}",
            o.errors
        );
        let o = Options::parse("slub.design=partial slub.sheaf_capacity=8", &all_specs());
        assert!(
            o.errors
                .iter()
                .any(|e| e.contains("slub.sheaf_capacity=8") && e.contains("slub.design=partial")),
            "{:?}",
            o.errors
        );
        let o = Options::parse("frame.pcp=off frame.pcp_high=64", &all_specs());
        assert!(
            o.errors
                .iter()
                .any(|e| e.contains("frame.pcp_high=64") && e.contains("frame.pcp=off")),
            "{:?}",
            o.errors
        );
        // A value-specific need: only rcu.kfree=sheaf needs sheaves.
        let o = Options::parse("slub.design=partial rcu.kfree=sheaf", &all_specs());
        assert!(
            o.errors
                .iter()
                .any(|e| e.contains("rcu.kfree=sheaf") && e.contains("slub.design=partial")),
            "{:?}",
            o.errors
        );
        // The knob of the chosen design is fine, given in either order.
        for line in [
            "slub.design=partial rcu.kfree=batched",
            "rcu.kfree=call_rcu slub.design=partial",
            "slub.design=hybrid rcu.kfree=sheaf",
            "rcu.kfree=sheaf",
            "slub.design=partial slub.cpu_partial=5",
            "slub.cpu_partial=0 slub.design=partial",
            "slub.sheaf_capacity=8",
            "frame.pcp=1 frame.pcp_high=64",
        ] {
            let o = Options::parse(line, &all_specs());
            assert!(o.errors.is_empty(), "{line}: {:?}", o.errors);
        }
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("slub.min_partal", "slub.min_partial"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(closest_key("frame.pcp_hihg"), Some("frame.pcp_high"));
        assert_eq!(closest_key("completely.different.thing"), None);
    }
}
