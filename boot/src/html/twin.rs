//! The HTML report's Linux twin section: the side-by-side table of `bench --kernel both|all`
//! (numalab partial, numalab sheaves, Linux 6.1, Linux 7.x and the ratios of the same design),
//! from the JSONL header's `side_by_side` (run/twin/table.rs writes it), one table per
//! experiment, with the metrics Linux cannot print named and why.

use super::page::{escape, table};
use serde_json::Value;

/// The section, or None when the run has no side-by-side table (no twin, or no rows).
pub fn section(h: &Value) -> Option<String> {
    let t = &h["side_by_side"];
    let rows = t["rows"].as_array().filter(|r| !r.is_empty())?;
    let columns: Vec<String> = t["columns"]
        .as_array()?
        .iter()
        .filter_map(|c| c.as_str().map(String::from))
        .collect();
    let mut head: Vec<&str> = vec!["case (numalab | linux)", "metric", "boot", "cpus"];
    head.extend(columns.iter().map(String::as_str));
    let numeric: Vec<usize> = (3..head.len()).collect();
    let mut benches: Vec<&str> = Vec::new();
    for r in rows {
        if let Some(b) = r["bench"].as_str() {
            if !benches.contains(&b) {
                benches.push(b);
            }
        }
    }
    let mut out = format!(
        "<section id=\"twin\">\n<h2>Linux twin</h2>\n<p class=\"note\">The same workload on \
         numalab and on Debian's Linux, same QEMU machine. numalab ran \
         <code>slub.design={}</code>; a numalab case of the other design has its own row; \
         page and vmalloc rows have one value (no slab). Ratios numalab/Linux of the same \
         design: Linux 6.1 is the partial design, 7.x sheaves (below 1: numalab uses less).\
         </p>\n",
        escape(t["numalab_design"].as_str().unwrap_or("sheaves"))
    );
    for bench in benches {
        let cells: Vec<(String, Vec<String>)> = rows
            .iter()
            .filter(|r| r["bench"].as_str() == Some(bench))
            .map(|r| {
                let mut c = vec![
                    escape(r["case"].as_str().unwrap_or("")),
                    escape(r["metric"].as_str().unwrap_or("")),
                    escape(r["boot"].as_str().unwrap_or("")),
                    r["cpus"].as_u64().map_or("-".into(), |n| n.to_string()),
                ];
                for col in &columns {
                    c.push(match r[col.as_str()].as_f64() {
                        Some(v) if col.contains('/') => format!("{v:.3}"),
                        Some(v) => escape(&crate::bench::fmt_value(v)),
                        None => "-".into(),
                    });
                }
                (String::new(), c)
            })
            .collect();
        out.push_str(&format!("<h3>{}</h3>\n", escape(bench)));
        out.push_str(&table("twin", &head, &numeric, &cells));
        let notes: Vec<String> = t["no_linux_figure"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| n["bench"].as_str() == Some(bench))
            .map(|n| {
                format!(
                    "<li>no Linux figure for <code>{}</code>: {}</li>",
                    escape(n["metric"].as_str().unwrap_or("")),
                    escape(n["why"].as_str().unwrap_or(""))
                )
            })
            .collect();
        if !notes.is_empty() {
            out.push_str(&format!(
                "<ul class=\"note\">\n{}\n</ul>\n",
                notes.join("\n")
            ));
        }
    }
    out.push_str("</section>\n");
    Some(out)
}
