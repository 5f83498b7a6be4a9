//! Typed option values: the handle `Opt<T>` and what each value type reads as (bool, u64, a
//! word, `auto` or a number, `none` or a number, and values with a syntax of their own).

use super::{Kind, Spec, Value};
use crate::bench::catalog;
use crate::bench::plan::Selection;
use crate::fault::FaultAttr;
use crate::slub::DebugFlags;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::marker::PhantomData;

/// The value type of a `Text` option (a word). A `Choice` option's type is its enum
/// (`choice!`).
pub struct Word;

/// A tunable that is `auto` (the kernel computes it) or a number the user gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoOr<T> {
    #[default]
    Auto,
    Set(T),
}

impl<T: Copy> AutoOr<T> {
    /// The number, or None for `auto`.
    pub fn set(self) -> Option<T> {
        match self {
            AutoOr::Auto => None,
            AutoOr::Set(v) => Some(v),
        }
    }
}

/// A value type with a syntax of its own, parsed by one function here and on the host.
pub trait ParsedValue {
    /// The accepted syntax, in words (shown in errors); also ties a spec's kind to the type.
    const SYNTAX: &'static str;
    /// What a read returns.
    type Parsed: Default;
    /// Parses a value, or says what is wrong with it.
    fn parse_value(text: &str) -> Result<Self::Parsed, String>;
    /// The spec kind of options of this type.
    const KIND: Kind = Kind::Parsed {
        syntax: Self::SYNTAX,
        check: |text| Self::parse_value(text).map(|_| ()),
    };
}

/// Fault injection attributes (`fault.*`): None is "off".
impl ParsedValue for FaultAttr {
    const SYNTAX: &'static str = "PROBABILITY%[,INTERVAL[,SEED]], 0: off";
    type Parsed = Option<FaultAttr>;
    fn parse_value(text: &str) -> Result<Option<FaultAttr>, String> {
        FaultAttr::parse(text)
    }
}

/// `slub.debug`: Linux's `slub_debug=` letters, optionally limited to some caches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlubDebug {
    pub flags: DebugFlags,
    /// The caches the flags apply to (empty: every cache).
    pub caches: Vec<String>,
}

impl ParsedValue for SlubDebug {
    const SYNTAX: &'static str = "flags F, Z, P, U (1: all, 0: none), then optionally ,CACHE...";
    type Parsed = SlubDebug;
    fn parse_value(text: &str) -> Result<SlubDebug, String> {
        let mut parts = text.split(',');
        let letters = parts.next().unwrap_or("");
        let flags = DebugFlags::parse(letters)
            .map_err(|c| format!("unknown flag '{}' in '{}'", c, text))?;
        let caches = parts.filter(|s| !s.is_empty()).map(String::from).collect();
        Ok(SlubDebug { flags, caches })
    }
}

/// `slub.sheaves_caches`: the caches that opt in to sheaves under `slub.design=hybrid`
/// (Linux 6.18's `kmem_cache_args.sheaf_capacity`), by name; `none`: no cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheNames {
    pub names: Vec<String>,
}

impl CacheNames {
    /// Whether `name` is one of the names.
    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

impl ParsedValue for CacheNames {
    const SYNTAX: &'static str = "NAME[,NAME...] of caches, or none";
    type Parsed = CacheNames;
    fn parse_value(text: &str) -> Result<CacheNames, String> {
        if text == "none" {
            return Ok(CacheNames::default());
        }
        let mut names = Vec::new();
        for name in text.split(',') {
            if !crate::slub::sysfs::name_ok(name) {
                return Err(format!("'{}' in '{}' is not a cache name", name, text));
            }
            names.push(String::from(name));
        }
        Ok(CacheNames { names })
    }
}

/// `bench=`: experiments of the catalog (kernel/algo/src/bench/catalog), comma-separated;
/// empty: every experiment. A name the catalog lacks is refused with the closest one.
impl ParsedValue for Selection {
    const SYNTAX: &'static str = "NAME[,NAME...] of the experiment catalog, empty: all";
    type Parsed = Selection;
    fn parse_value(text: &str) -> Result<Selection, String> {
        let sel = Selection::parse(text);
        for name in sel.names() {
            if catalog::find(name).is_none() {
                let near = catalog::names()
                    .map(|k| (super::distance(name, k), k))
                    .min()
                    .filter(|(d, _)| *d <= (name.len() / 3).max(2));
                let known: Vec<&str> = catalog::names().collect();
                return Err(match near {
                    Some((_, k)) => format!("no experiment '{}': did you mean '{}'?", name, k),
                    None => format!(
                        "no experiment '{}' (experiments: {})",
                        name,
                        known.join(", ")
                    ),
                });
            }
        }
        Ok(sel)
    }
}

/// What an option's value reads as, by the type parameter of its `Opt`.
pub trait OptType {
    /// The Rust type a read returns.
    type Out<'a>;
    /// Whether `kind` is a kind of this type (checked when an `Opt` is declared).
    fn accepts(kind: &Kind) -> bool;
    /// The value as this type (None when the stored value has another type).
    fn read(value: &Value) -> Option<Self::Out<'_>>;
    /// Whether the spec's default is this type's own default (choice enums mark theirs with
    /// `#[default]`; other types have none of their own).
    fn default_matches(_spec_default: &str) -> bool {
        true
    }
}

/// How a typed value is written on the kernel command line (the host's `Cmdline::set`).
pub trait Render: OptType {
    /// What `set` takes.
    type In<'a>;
    /// The value as the command line word after `KEY=`.
    fn render(value: Self::In<'_>) -> String;
}

impl Render for bool {
    type In<'a> = bool;
    fn render(value: bool) -> String {
        String::from(if value { "1" } else { "0" })
    }
}

impl Render for u64 {
    type In<'a> = u64;
    fn render(value: u64) -> String {
        format!("{}", value)
    }
}

impl Render for Word {
    type In<'a> = &'a str;
    fn render(value: &str) -> String {
        String::from(value)
    }
}

impl Render for AutoOr<u64> {
    type In<'a> = AutoOr<u64>;
    fn render(value: AutoOr<u64>) -> String {
        match value {
            AutoOr::Auto => String::from("auto"),
            AutoOr::Set(v) => format!("{}", v),
        }
    }
}

impl Render for Option<u64> {
    type In<'a> = Option<u64>;
    fn render(value: Option<u64>) -> String {
        match value {
            None => String::from("none"),
            Some(v) => format!("{}", v),
        }
    }
}

/// `bench=`: the selected names, comma-separated (empty: all).
impl Render for Selection {
    type In<'a> = &'a Selection;
    fn render(value: &Selection) -> String {
        value.names().join(",")
    }
}

impl OptType for bool {
    type Out<'a> = bool;
    fn accepts(kind: &Kind) -> bool {
        matches!(kind, Kind::Bool)
    }
    fn read(value: &Value) -> Option<bool> {
        match value {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl OptType for u64 {
    type Out<'a> = u64;
    fn accepts(kind: &Kind) -> bool {
        matches!(kind, Kind::U64 { .. })
    }
    fn read(value: &Value) -> Option<u64> {
        match value {
            Value::U64(v) => Some(*v),
            _ => None,
        }
    }
}

impl OptType for Word {
    type Out<'a> = &'a str;
    fn accepts(kind: &Kind) -> bool {
        matches!(kind, Kind::Text)
    }
    fn read(value: &Value) -> Option<&str> {
        match value {
            Value::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl OptType for AutoOr<u64> {
    type Out<'a> = AutoOr<u64>;
    fn accepts(kind: &Kind) -> bool {
        matches!(
            kind,
            Kind::KeywordOr {
                keyword: "auto",
                ..
            }
        )
    }
    fn read(value: &Value) -> Option<AutoOr<u64>> {
        match value {
            Value::Keyword(_) => Some(AutoOr::Auto),
            Value::U64(v) => Some(AutoOr::Set(*v)),
            _ => None,
        }
    }
}

/// `none` or a number (an id).
impl OptType for Option<u64> {
    type Out<'a> = Option<u64>;
    fn accepts(kind: &Kind) -> bool {
        matches!(
            kind,
            Kind::KeywordOr {
                keyword: "none",
                ..
            }
        )
    }
    fn read(value: &Value) -> Option<Option<u64>> {
        match value {
            Value::Keyword(_) => Some(None),
            Value::U64(v) => Some(Some(*v)),
            _ => None,
        }
    }
}

/// Implements [`OptType`] for a [`ParsedValue`] type: the stored text parsed by its parser.
macro_rules! parsed_opt_type {
    ($($t:ty),*) => {$(
        impl OptType for $t {
            type Out<'a> = <$t as ParsedValue>::Parsed;
            fn accepts(kind: &Kind) -> bool {
                matches!(kind, Kind::Parsed { syntax, .. } if *syntax == <$t as ParsedValue>::SYNTAX)
            }
            fn read(value: &Value) -> Option<Self::Out<'_>> {
                match value {
                    Value::Text(t) => <$t as ParsedValue>::parse_value(t).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
parsed_opt_type!(FaultAttr, SlubDebug, Selection, CacheNames);

/// A typed handle on one option: its spec and the type its value reads as. Code reads options
/// only through handles declared in the component tables (`opts.get(&slub::SLUB_MAX_ORDER)`),
/// so a misspelt key or a wrong type is a compile error instead of a silent 0.
pub struct Opt<T> {
    pub spec: Spec,
    _type: PhantomData<T>,
}

impl<T> Opt<T> {
    /// Declares a handle; `T` must match `spec.kind` (see [`OptType::accepts`]), which
    /// `Options::get` relies on and `Opt::check` verifies.
    pub const fn new(spec: Spec) -> Opt<T> {
        Opt {
            spec,
            _type: PhantomData,
        }
    }
}

impl<T: OptType> Opt<T> {
    /// Whether the handle's type matches its spec's kind and its default parses.
    pub fn check(&self) -> Result<(), String> {
        if !T::accepts(&self.spec.kind) {
            return Err(format!(
                "option {}: handle type does not match its kind {:?}",
                self.spec.key, self.spec.kind
            ));
        }
        if !T::default_matches(self.spec.default) {
            return Err(format!(
                "option {}: its default '{}' is not the #[default] variant of its enum",
                self.spec.key, self.spec.default
            ));
        }
        super::parse_value(&self.spec, self.spec.default).map(|_| ())
    }
}
