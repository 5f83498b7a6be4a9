//! The kernel command line as the host builds it: typed settings keyed by the [`Opt`] handles
//! (`cmdline.set(&SLUB_DESIGN, Design::Sheaves)`), each option at most once, rendered to
//! `key=value` text in one place ([`Cmdline::render`], where QEMU's arguments are made).
//! A `--set KEY=VALUE` word is parsed once into a [`Setting`] against the same table the
//! kernel parses; a bad one is refused there with the message [`check_word`] gives.

use super::{
    all_specs, check_word, find, parse_value, Choice, Opt, OptType, Options, Render, Value,
};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// One option and its parsed value: a `KEY=VALUE` word that the table accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    key: &'static str,
    value: Value,
}

impl Setting {
    /// Parses a `KEY=VALUE` word: Ok, or the one-line message of [`check_word`].
    pub fn parse(word: &str) -> Result<Setting, String> {
        check_word(word)?;
        let (key, text) = word
            .split_once('=')
            .ok_or_else(|| format!("option '{}': expected KEY=VALUE", word))?;
        let spec = find(key).ok_or_else(|| super::unknown_key_message(key))?;
        let value = parse_value(spec, text)?;
        Ok(Setting {
            key: spec.key,
            value,
        })
    }

    /// The option's key.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// The `KEY=VALUE` word the kernel gets.
    pub fn word(&self) -> String {
        format!("{}={}", self.key, render_value(&self.value))
    }
}

/// A value as the text after `KEY=` (bools as `1`/`0`, numbers in decimal).
pub(crate) fn render_value(value: &Value) -> String {
    match value {
        Value::Bool(b) => (*b as u8).to_string(),
        Value::U64(v) => v.to_string(),
        Value::Keyword(k) => k.to_string(),
        Value::Choice { name, .. } => name.to_string(),
        Value::Text(t) => t.clone(),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Set(Setting),
    /// A word the host passes as written (tests of the kernel's own refusal only).
    Unchecked(String),
}

/// The options of one boot, in the order they were set; setting an option again replaces its
/// earlier value (the word moves to the end, where the kernel's last-one-wins would put it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cmdline {
    entries: Vec<Entry>,
}

impl Cmdline {
    pub fn new() -> Cmdline {
        Cmdline::default()
    }

    /// Sets `opt` to `value`; Err (one line) when the value is outside the option's range.
    pub fn set<T: Render>(&mut self, opt: &Opt<T>, value: T::In<'_>) -> Result<(), String> {
        let word = format!("{}={}", opt.spec.key, T::render(value));
        self.push(Setting::parse(&word)?);
        Ok(())
    }

    /// Sets a choice option: every variant is a valid value, so this cannot fail.
    pub fn set_choice<T: Choice>(&mut self, opt: &Opt<T>, value: T) {
        let index = T::all().iter().position(|v| *v == value).unwrap_or(0);
        self.push(Setting {
            key: opt.spec.key,
            value: Value::Choice {
                index,
                name: value.name(),
            },
        });
    }

    /// Sets a bool option (cannot fail).
    pub fn set_bool(&mut self, opt: &Opt<bool>, value: bool) {
        self.push(Setting {
            key: opt.spec.key,
            value: Value::Bool(value),
        });
    }

    /// Sets `opt` to `value` unless it is set already (the user's `--set` wins).
    pub fn set_default<T: Render>(&mut self, opt: &Opt<T>, value: T::In<'_>) -> Result<(), String> {
        if self.is_set(opt) {
            return Ok(());
        }
        self.set(opt, value)
    }

    /// Adds a parsed setting, replacing an earlier value of its option.
    pub fn push(&mut self, setting: Setting) {
        self.remove_key(setting.key);
        self.entries.push(Entry::Set(setting));
    }

    /// Parses and adds a `KEY=VALUE` word (a `--set`, a sweep axis, a test's option).
    pub fn set_word(&mut self, word: &str) -> Result<(), String> {
        self.push(Setting::parse(word)?);
        Ok(())
    }

    /// Adds `word` as written, unchecked: only for tests that hand the kernel a word the host
    /// would refuse, to see the kernel refuse it too.
    pub fn push_unchecked(&mut self, word: &str) {
        self.entries.push(Entry::Unchecked(String::from(word)));
    }

    /// Every setting of `other`, in its order, over these.
    pub fn extend(&mut self, other: &Cmdline) {
        for e in &other.entries {
            match e {
                Entry::Set(s) => self.push(s.clone()),
                Entry::Unchecked(w) => self.push_unchecked(w),
            }
        }
    }

    fn remove_key(&mut self, key: &str) {
        self.entries
            .retain(|e| !matches!(e, Entry::Set(s) if s.key == key));
    }

    /// Drops the setting of `opt` (the kernel then uses its default).
    pub fn remove<T>(&mut self, opt: &Opt<T>) {
        self.remove_key(opt.spec.key);
    }

    /// Whether `opt` is set.
    pub fn is_set<T>(&self, opt: &Opt<T>) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e, Entry::Set(s) if s.key == opt.spec.key))
    }

    /// The value `opt` is set to, None when it is not set.
    pub fn get<T: OptType>(&self, opt: &Opt<T>) -> Option<T::Out<'_>> {
        self.entries.iter().find_map(|e| match e {
            Entry::Set(s) if s.key == opt.spec.key => T::read(&s.value),
            _ => None,
        })
    }

    /// The options as the kernel reads them: every option, set or default.
    pub fn options(&self) -> Options {
        Options::parse(&self.render(), &all_specs())
    }

    /// The `KEY=VALUE` words, in order.
    pub fn words(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| match e {
                Entry::Set(s) => s.word(),
                Entry::Unchecked(w) => w.clone(),
            })
            .collect()
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The command line: the words separated by spaces.
    pub fn render(&self) -> String {
        self.words().join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{bench, run, slub, smp, vmalloc, AutoOr, Suite};
    use crate::slub::Design;
    use crate::vmalloc::Policy;

    #[test]
    fn typed_settings_render_once_and_replace_earlier_values() {
        let mut c = Cmdline::new();
        c.set_choice(&run::SUITE, Suite::Bench);
        c.set(&slub::SLUB_DESIGN, Design::Partial).unwrap();
        c.set_bool(&bench::BENCH_SMOKE, true);
        c.set(&slub::SLUB_MIN_PARTIAL, AutoOr::Set(7)).unwrap();
        c.set(&smp::SMP_TIMEOUT_MS, 3000).unwrap();
        c.set(&slub::SLUB_DESIGN, Design::Sheaves).unwrap();
        assert_eq!(
            c.render(),
            "suite=bench bench.smoke=1 slub.min_partial=7 smp.timeout_ms=3000 slub.design=sheaves"
        );
        assert_eq!(c.get(&slub::SLUB_DESIGN), Some(Design::Sheaves));
        assert!(c.is_set(&bench::BENCH_SMOKE) && !c.is_set(&vmalloc::VMALLOC_NODES));
        c.set_default(&bench::BENCH_SMOKE, false).unwrap();
        c.set_default(&vmalloc::VMALLOC_NODES, Policy::Numa)
            .unwrap();
        assert_eq!(c.get(&bench::BENCH_SMOKE), Some(true));
        assert_eq!(c.options().get(&vmalloc::VMALLOC_NODES), Policy::Numa);
        c.remove(&vmalloc::VMALLOC_NODES);
        assert_eq!(c.options().get(&vmalloc::VMALLOC_NODES), Policy::Cpu);
    }

    #[test]
    fn out_of_range_and_unknown_words_are_refused_in_one_line() {
        let mut c = Cmdline::new();
        let e = c.set(&smp::SMP_TIMEOUT_MS, 0).unwrap_err();
        assert!(
            e.contains("smp.timeout_ms") && e.contains("1..=600000"),
            "{e}"
        );
        let e = c.set_word("slub.design=hybird").unwrap_err();
        assert!(e.contains("valid: sheaves, partial"), "{e}");
        let e = c.set_word("filter=a b").unwrap_err();
        assert!(e.contains("whitespace"), "{e}");
        assert!(c.is_empty());
        // A --set word is normalised: the kernel reads the same value.
        c.set_word("acpi.dump=on").unwrap();
        c.set_word("slub.max_order=0x4").unwrap();
        assert_eq!(c.render(), "acpi.dump=1 slub.max_order=4");
        c.push_unchecked("no.such.key=1");
        assert_eq!(c.words().last().map(String::as_str), Some("no.such.key=1"));
    }
}
