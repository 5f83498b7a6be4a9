//! HTML escaping of text and (quoted) attribute values: the one function the run report
//! (html/) and compare's page (report/compare_html.rs) share, a leaf so neither imports the other.

/// `s` escaped for HTML text and (quoted) attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
