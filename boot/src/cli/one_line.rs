//! A value parser whose refusal is one line: clap quotes a refused value whole, so a value
//! holding a newline (or 50 MB) made a message of many lines. [`OneLine`] quotes at most
//! [`QUOTE_CHARS`] characters, escaped (`\n`, `\t`), and says how many more there were.

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use std::ffi::OsStr;

/// The most characters of a user's value an error message quotes.
pub const QUOTE_CHARS: usize = 200;

/// `text` escaped (`\n`, `\t`, `\u{..}`) and cut to [`QUOTE_CHARS`] characters, with how many
/// were left out.
pub fn quote(text: &str) -> String {
    let escaped: String = text.escape_debug().collect();
    let n = escaped.chars().count();
    if n <= QUOTE_CHARS {
        return escaped;
    }
    let head: String = escaped.chars().take(QUOTE_CHARS).collect();
    format!("{head}... ({} more characters)", n - QUOTE_CHARS)
}

/// clap's last line under an error.
pub const HINT: &str = "For more information, try '--help'.";

/// A `&str -> Result<T, String>` check as a clap value parser with one-line refusals.
#[derive(Clone)]
pub struct OneLine<F>(pub F);

impl<F, T> TypedValueParser for OneLine<F>
where
    F: Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let name = arg.map_or_else(|| "the value".to_string(), |a| format!("'{a}'"));
        let text = value.to_string_lossy();
        (self.0)(&text).map_err(|why| {
            let why = why.replace('\n', "\\n");
            clap::Error::raw(
                ErrorKind::ValueValidation,
                format!(
                    "invalid value '{}' for {name}: {why}\n\n{HINT}\n",
                    quote(&text)
                ),
            )
            .with_cmd(cmd)
        })
    }
}
