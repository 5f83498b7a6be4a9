//! Choice options as enums: [`choice!`] declares an enum and the word of each variant in one
//! place, and implements [`Choice`] for it, so the option table (`Kind::Choice(T::NAMES)`),
//! the host's command line (`Cmdline::set(&SLUB_DESIGN, Design::Sheaves)`) and the kernel's
//! read (`opts.get(&SLUB_DESIGN)` is a `Design`) all use the same list. A value outside the
//! list is refused by the parser on both sides; nothing compares the words again.

use super::{Kind, Value};

/// An enum whose variants are the values of a choice option.
pub trait Choice: Copy + Default + PartialEq + 'static {
    /// Each variant's word, in declaration order (what the table and messages list).
    const NAMES: &'static [&'static str];
    /// The spec kind of options of this type.
    const KIND: Kind = Kind::Choice(Self::NAMES);
    /// Every variant, in declaration order.
    fn all() -> &'static [Self];
    /// The variant's word.
    fn name(self) -> &'static str;
    /// The variant with this word.
    fn from_name(name: &str) -> Option<Self> {
        let i = Self::NAMES.iter().position(|n| *n == name)?;
        Self::all().get(i).copied()
    }
}

/// Reads a parsed choice: the index the parser stored, when `kind` lists `T`'s words.
pub(crate) fn read_choice<T: Choice>(value: &Value) -> Option<T> {
    match value {
        Value::Choice { index, .. } => T::all().get(*index).copied(),
        _ => None,
    }
}

/// Whether `kind` is the choice kind of `T` (the same words in the same order).
pub(crate) fn accepts_choice<T: Choice>(kind: &Kind) -> bool {
    matches!(kind, Kind::Choice(names) if *names == T::NAMES)
}

/// Declares a choice enum: `pub enum Design { #[default] Sheaves = "sheaves", Partial =
/// "partial" }` (doc comments on the enum and each variant allowed). The `#[default]` variant
/// must be the option's default (`Opt::check` verifies it). Adding a value is one line here;
/// the compiler then names every `match` that must handle it.
macro_rules! choice {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $word:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$($word),+].len()] = [$($name::$variant),+];

            /// The variant's word on the command line.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The variant with this word.
            pub fn from_name(name: &str) -> Option<$name> {
                <$name as $crate::options::Choice>::from_name(name)
            }
        }

        impl $crate::options::Choice for $name {
            const NAMES: &'static [&'static str] = &[$($word),+];
            fn all() -> &'static [$name] {
                &$name::ALL
            }
            fn name(self) -> &'static str {
                $name::name(self)
            }
        }

        impl $crate::options::OptType for $name {
            type Out<'a> = $name;
            fn accepts(kind: &$crate::options::Kind) -> bool {
                $crate::options::accepts_choice::<$name>(kind)
            }
            fn read(value: &$crate::options::Value) -> Option<$name> {
                $crate::options::read_choice::<$name>(value)
            }
            fn default_matches(spec_default: &str) -> bool {
                $name::default().name() == spec_default
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl $crate::options::Render for $name {
            type In<'a> = $name;
            fn render(value: $name) -> alloc::string::String {
                alloc::string::String::from(value.name())
            }
        }
    };
}
pub(crate) use choice;
