//! Kernel options: `key=value` words (from QEMU's fw_cfg) checked against a table of specs.
//!
//! The kernel owns the table (kernel/src/options.rs); this module only parses and validates,
//! so a bad option becomes an error message naming the key and the valid choices, never a panic.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// What values an option accepts.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// `0`/`1` (also `off`/`on`, `false`/`true`).
    Bool,
    /// An unsigned integer in `min..=max` (decimal, or hex with `0x`).
    U64 { min: u64, max: u64 },
    /// One word out of a fixed list.
    Choice(&'static [&'static str]),
    /// Any word (validated by the subsystem that reads it).
    Text,
}

/// One known option.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub key: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub help: &'static str,
}

/// A parsed, validated value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Bool(bool),
    U64(u64),
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
            if choices.contains(&text) {
                Ok(Value::Text(text.to_string()))
            } else {
                Err(format!(
                    "option {}: bad value '{}' (valid: {})",
                    spec.key,
                    text,
                    choices.join(", ")
                ))
            }
        }
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
                let known: Vec<&str> = specs.iter().map(|s| s.key).collect();
                opts.errors.push(format!(
                    "unknown option '{}' (valid keys: {})",
                    key,
                    known.join(", ")
                ));
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
        opts
    }

    fn value(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|e| e.0 == key).map(|e| &e.1)
    }

    /// Whether the user set `key` explicitly (rather than it holding its default).
    pub fn is_set(&self, key: &str) -> bool {
        self.entries.iter().any(|e| e.0 == key && e.2)
    }

    /// A boolean option (false when the key is unknown: the spec table is the kernel's).
    pub fn bool(&self, key: &str) -> bool {
        matches!(self.value(key), Some(Value::Bool(true)))
    }

    /// An integer option (0 when unknown).
    pub fn u64(&self, key: &str) -> u64 {
        match self.value(key) {
            Some(Value::U64(v)) => *v,
            _ => 0,
        }
    }

    /// A word option ("" when unknown).
    pub fn text(&self, key: &str) -> &str {
        match self.value(key) {
            Some(Value::Text(t)) => t,
            _ => "",
        }
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

    const SPECS: &[Spec] = &[
        Spec {
            key: "suite",
            kind: Kind::Choice(&["test", "stress"]),
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

    #[test]
    fn defaults_and_values() {
        let o = Options::parse("acpi.dump=1 slub.max_order=0x4", SPECS);
        assert!(o.errors.is_empty(), "{:?}", o.errors);
        assert_eq!(o.text("suite"), "test");
        assert!(o.bool("acpi.dump"));
        assert!(o.is_set("acpi.dump"));
        assert!(!o.is_set("suite"));
        assert_eq!(o.u64("slub.max_order"), 4);
        assert_eq!(o.describe(), "suite=test acpi.dump=1 slub.max_order=4");
    }

    #[test]
    fn errors_name_key_and_choices() {
        let o = Options::parse("bogus=1 suite=fast slub.max_order=11 noequals", SPECS);
        assert_eq!(o.errors.len(), 4);
        assert!(o.errors[0].contains("unknown option 'bogus'"));
        assert!(o.errors[0].contains("suite, acpi.dump, slub.max_order"));
        assert!(o.errors[1].contains("valid: test, stress"));
        assert!(o.errors[2].contains("0..=10"));
        assert!(o.errors[3].contains("expected key=value"));
        assert_eq!(o.text("suite"), "test");
    }
}
