//! The HTML page skeleton of a report: escaping of text and attribute values, relative links
//! (percent-encoded), tables, and the page itself with its inline style sheet (no script, no
//! network: the page is one self-contained file).

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

pub use crate::report::escape::escape;

/// A relative URL path percent-encoded (RFC 3986): every byte but unreserved characters and
/// `/` as `%XX`, so a file name with spaces or `#` still links to itself.
pub fn url_path(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The path of `to` relative to the directory `from` (both made absolute first), with `/`
/// separators: `../x.jsonl` for a JSONL beside the run folder.
pub fn relative(from: &Path, to: &Path) -> String {
    let abs = |p: &Path| -> PathBuf {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|d| d.join(p))
                .unwrap_or_else(|_| p.to_path_buf())
        })
    };
    let (from, to) = (abs(from), abs(to));
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().to_string()),
    );
    parts.join("/")
}

/// A link to `href` (relative, unencoded) showing `text`.
pub fn link(href: &str, text: &str) -> String {
    format!(
        "<a href=\"{}\">{}</a>",
        escape(&url_path(href)),
        escape(text)
    )
}

/// A table: a header row and body rows of cells already in HTML, each row with an optional
/// class; the columns listed in `numeric` are right-aligned (class `num`).
pub fn table(
    class: &str,
    head: &[&str],
    numeric: &[usize],
    rows: &[(String, Vec<String>)],
) -> String {
    let mut t = format!("<table class=\"{}\">\n<thead><tr>", escape(class));
    for h in head {
        let _ = write!(t, "<th>{}</th>", escape(h));
    }
    t.push_str("</tr></thead>\n<tbody>\n");
    for (class, cells) in rows {
        if class.is_empty() {
            t.push_str("<tr>");
        } else {
            let _ = write!(t, "<tr class=\"{}\">", escape(class));
        }
        for (i, c) in cells.iter().enumerate() {
            if numeric.contains(&i) {
                let _ = write!(t, "<td class=\"num\">{c}</td>");
            } else {
                let _ = write!(t, "<td>{c}</td>");
            }
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</tbody></table>\n");
    t
}

/// A two-column table of facts (name, value in HTML).
pub fn facts(rows: &[(&str, String)]) -> String {
    let mut t = String::from("<table class=\"facts\">\n");
    for (k, v) in rows {
        let _ = writeln!(t, "<tr><th>{}</th><td>{v}</td></tr>", escape(k));
    }
    t.push_str("</table>\n");
    t
}

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:1.5em auto;\
max-width:1200px;padding:0 1em;color:#222;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ccc;padding-bottom:.2em;\
margin-top:2em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:13px}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
thead th{background:#eef2f7;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.facts th{background:#f6f6f6;white-space:nowrap}
tr.exact td{background:#eefaee}tr.oversubscribed td{background:#fbeeee}
tr.first td{border-top:2px solid #999}
.tag{display:inline-block;padding:0 5px;border-radius:3px;font-size:11px;font-weight:600}
.tag.exact{background:#2e7d32;color:#fff}.tag.over{background:#c62828;color:#fff}
.tag.host{background:#888;color:#fff}.tag.fail{background:#c62828;color:#fff}
.tag.pass{background:#2e7d32;color:#fff}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;overflow-x:auto;font-size:12px}
code{font-size:12px}
table.results code{white-space:nowrap}
table.boots code{overflow-wrap:anywhere}
details code{display:block;max-width:60em}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:12px}
.charts figure{margin:0}
.charts svg{border:1px solid #ddd;width:100%;height:auto}
figcaption{font-size:12px}
nav ul{list-style:none;padding:0;margin:.4em 0;display:flex;flex-wrap:wrap;gap:.2em 1.2em}
.note{color:#555;font-size:13px}
";

/// The whole page: `title` and `body` (HTML) inside the skeleton with the style sheet.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_are_escaped() {
        assert_eq!(
            escape("<a href=\"x\">O'Neil & co</a>"),
            "&lt;a href=&quot;x&quot;&gt;O&#39;Neil &amp; co&lt;/a&gt;"
        );
        assert_eq!(escape("plain_text 1.5"), "plain_text 1.5");
        let p = page("a <b>", "<p>x</p>\n");
        assert!(p.starts_with("<!DOCTYPE html>"), "{p}");
        assert!(p.contains("<title>a &lt;b&gt;</title>"), "{p}");
        assert!(!p.contains("<script") && !p.contains("http://") && !p.contains("https://"));
    }

    #[test]
    fn links_are_relative_and_encoded() {
        assert_eq!(url_path("proc/lock stat#1"), "proc/lock%20stat%231");
        assert_eq!(
            link("../r&d.jsonl", "r&d"),
            "<a href=\"../r%26d.jsonl\">r&amp;d</a>"
        );
        let base = std::env::temp_dir().join(format!("numalab-page-{}", std::process::id()));
        let run = base.join("20260101-000000-abc");
        std::fs::create_dir_all(run.join("proc")).unwrap();
        let jsonl = base.join("20260101-000000-abc.jsonl");
        std::fs::write(&jsonl, "").unwrap();
        assert_eq!(relative(&run, &jsonl), "../20260101-000000-abc.jsonl");
        assert_eq!(relative(&run, &run.join("proc")), "proc");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn tables_mark_their_rows() {
        let t = table(
            "runs",
            &["a", "b<"],
            &[1],
            &[
                ("exact".into(), vec!["1".into(), "<b>2</b>".into()]),
                (String::new(), vec!["3".into(), "4".into()]),
            ],
        );
        assert!(t.contains("<th>b&lt;</th>"), "{t}");
        assert!(
            t.contains("<tr class=\"exact\"><td>1</td><td class=\"num\"><b>2</b></td></tr>"),
            "{t}"
        );
        assert!(t.contains("<tr><td>3</td>"), "{t}");
        assert_eq!(t.matches("<tr").count(), 3);
    }
}
