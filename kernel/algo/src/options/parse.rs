//! The option parser: a `key=value` command line checked against a table of specs, every
//! spec keeping its default unless given; a bad word becomes an error message naming the key
//! and what it accepts, never a panic.

use super::{Kind, Opt, OptType, Spec};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// A parsed, validated value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Bool(bool),
    U64(u64),
    /// The keyword of a `KeywordOr` option (`auto`, `none`).
    Keyword(&'static str),
    /// A word of a `Choice` option: its place in the list (what a typed read uses) and the
    /// word itself (what the boot log shows).
    Choice {
        index: usize,
        name: &'static str,
    },
    Text(String),
}

/// The options of one boot: every spec with either its default or the given value.
#[derive(Clone, Debug, Default)]
pub struct Options {
    entries: Vec<(&'static str, Value, bool)>,
    /// One message per rejected word (unknown key, bad value, missing `=`).
    pub errors: Vec<String>,
}

fn parse_u64(text: &str) -> Option<u64> {
    if let Some(hex) = text.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else {
        text.parse().ok()
    }
}

/// Checks `text` against `spec`, or says why it is not valid.
pub fn parse_value(spec: &Spec, text: &str) -> Result<Value, String> {
    match spec.kind {
        Kind::Bool => match text {
            "1" | "on" | "true" | "y" => Ok(Value::Bool(true)),
            "0" | "off" | "false" | "n" => Ok(Value::Bool(false)),
            _ => Err(format!(
                "option {}: bad value '{}' (valid: 0 or 1)",
                spec.key, text
            )),
        },
        Kind::U64 { min, max } => match parse_u64(text) {
            Some(v) if (min..=max).contains(&v) => Ok(Value::U64(v)),
            _ => Err(format!(
                "option {}: bad value '{}' (valid: integer {}..={})",
                spec.key, text, min, max
            )),
        },
        Kind::Choice(choices) => {
            if let Some(index) = choices.iter().position(|c| *c == text) {
                Ok(Value::Choice {
                    index,
                    name: choices[index],
                })
            } else {
                Err(format!(
                    "option {}: bad value '{}' (valid: {})",
                    spec.key,
                    text,
                    choices.join(", ")
                ))
            }
        }
        Kind::KeywordOr { keyword, min, max } => {
            if text == keyword {
                return Ok(Value::Keyword(keyword));
            }
            match parse_u64(text) {
                Some(v) if (min..=max).contains(&v) => Ok(Value::U64(v)),
                _ => Err(format!(
                    "option {}: bad value '{}' (valid: {})",
                    spec.key,
                    text,
                    spec.kind.accepted()
                )),
            }
        }
        Kind::Parsed { syntax, check } => match check(text) {
            Ok(()) => Ok(Value::Text(text.to_string())),
            Err(why) => Err(format!(
                "option {}: bad value '{}': {} (valid: {})",
                spec.key, text, why, syntax
            )),
        },
        Kind::Text => Ok(Value::Text(text.to_string())),
    }
}

impl Options {
    /// Parses a whitespace-separated `key=value` command line against `specs`. Bad words are
    /// collected in `errors` and otherwise ignored; every spec keeps its default unless given.
    pub fn parse(cmdline: &str, specs: &[Spec]) -> Options {
        let mut opts = Options::default();
        for spec in specs {
            let value = parse_value(spec, spec.default).unwrap_or(Value::Text(String::new()));
            opts.entries.push((spec.key, value, false));
        }
        for word in cmdline.split_whitespace() {
            let Some((key, text)) = word.split_once('=') else {
                opts.errors
                    .push(format!("option '{}': expected key=value", word));
                continue;
            };
            let Some(spec) = specs.iter().find(|s| s.key == key) else {
                opts.errors.push(super::unknown_key_message(key));
                continue;
            };
            match parse_value(spec, text) {
                Ok(v) => {
                    if let Some(e) = opts.entries.iter_mut().find(|e| e.0 == key) {
                        e.1 = v;
                        e.2 = true;
                    }
                }
                Err(msg) => opts.errors.push(msg),
            }
        }
        // A knob the chosen design does not read is an error, not a value read as nothing.
        let words: Vec<&str> = cmdline.split_whitespace().collect();
        opts.errors.extend(super::ignored_knobs(&words));
        opts
    }

    fn value(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|e| e.0 == key).map(|e| &e.1)
    }

    /// Whether the user set `opt` explicitly (rather than it holding its default).
    pub fn is_set<T>(&self, opt: &Opt<T>) -> bool {
        self.entries.iter().any(|e| e.0 == opt.spec.key && e.2)
    }

    /// The value of `opt`: given on the command line, or its default. An `Opt` whose spec is
    /// not in the table this was parsed with, or whose type does not match its kind (the
    /// `options` test checks every handle), reads as its type's zero.
    pub fn get<'a, T: OptType>(&'a self, opt: &Opt<T>) -> T::Out<'a>
    where
        T::Out<'a>: Default,
    {
        self.value(opt.spec.key)
            .and_then(T::read)
            .unwrap_or_default()
    }

    /// Every option as `key=value`, for the boot log.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for (key, value, _) in &self.entries {
            if !out.is_empty() {
                out.push(' ');
            }
            let shown = match value {
                Value::Bool(b) => (*b as u8).to_string(),
                Value::U64(v) => v.to_string(),
                Value::Keyword(k) => k.to_string(),
                Value::Choice { name, .. } => name.to_string(),
                Value::Text(t) => t.clone(),
            };
            out.push_str(key);
            out.push('=');
            out.push_str(&shown);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{Choice, Suite};

    const SPECS: &[Spec] = &[
        Spec {
            key: "suite",
            kind: Suite::KIND,
            default: "test",
            help: "",
        },
        Spec {
            key: "acpi.dump",
            kind: Kind::Bool,
            default: "0",
            help: "",
        },
        Spec {
            key: "slub.max_order",
            kind: Kind::U64 { min: 0, max: 10 },
            default: "3",
            help: "",
        },
    ];

    const DUMP: Opt<bool> = Opt::new(SPECS[1]);
    const MAX_ORDER: Opt<u64> = Opt::new(SPECS[2]);
    const SUITE: Opt<Suite> = Opt::new(SPECS[0]);

    #[test]
    fn defaults_and_values() {
        let o = Options::parse("acpi.dump=1 slub.max_order=0x4", SPECS);
        assert!(o.errors.is_empty(), "{:?}", o.errors);
        assert_eq!(o.get(&SUITE), Suite::Test);
        assert!(o.get(&DUMP));
        assert!(o.is_set(&DUMP));
        assert!(!o.is_set(&SUITE));
        assert_eq!(o.get(&MAX_ORDER), 4);
        assert_eq!(o.describe(), "suite=test acpi.dump=1 slub.max_order=4");
    }

    #[test]
    fn typed_handles() {
        let o = Options::parse("acpi.dump=1 slub.max_order=7", SPECS);
        assert!(o.get(&DUMP));
        assert_eq!(o.get(&MAX_ORDER), 7);
        assert_eq!(o.get(&SUITE), Suite::Test);
        assert!(DUMP.check().is_ok() && MAX_ORDER.check().is_ok() && SUITE.check().is_ok());
        let wrong: Opt<u64> = Opt::new(SPECS[1]);
        assert!(wrong.check().unwrap_err().contains("acpi.dump"));
        assert_eq!(o.get(&wrong), 0);
    }

    #[test]
    fn errors_name_key_and_choices() {
        let o = Options::parse("bogus=1 suite=fast slub.max_order=11 noequals", SPECS);
        assert_eq!(o.errors.len(), 4);
        assert!(
            o.errors[0].contains("unknown kernel option 'bogus'"),
            "{}",
            o.errors[0]
        );
        assert!(o.errors[1].contains("valid: test, stress"));
        assert!(o.errors[2].contains("0..=10"));
        assert!(o.errors[3].contains("expected key=value"));
        assert_eq!(o.get(&SUITE), Suite::Test);
    }
}
