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

#[cfg(test)]
mod tests {
    use super::section;
    use serde_json::json;

    #[test]
    fn one_table_per_experiment_with_the_four_columns_and_notes() {
        let h = json!({"side_by_side": {
            "numalab_design": "sheaves",
            "columns": ["numalab partial", "numalab sheaves", "linux-6.1.192", "linux-7.3.4",
                        "partial/6.1", "sheaves/7"],
            "rows": [
                {"bench": "page_alloc", "case": "numalab | linux", "metric": "instructions_per_pair",
                 "boot": "icount", "cpus": 1, "numalab partial": 87.0, "numalab sheaves": 87.0,
                 "linux-6.1.192": 4814.0, "linux-7.3.4": 5128.0, "partial/6.1": 0.0181,
                 "sheaves/7": 0.017},
                {"bench": "alloc_peers", "case": "numalab/fast64 | kmalloc/fast64",
                 "metric": "instructions_per_pair", "boot": "icount", "cpus": 1,
                 "numalab partial": null, "numalab sheaves": 125.0, "linux-6.1.192": 304.1,
                 "linux-7.3.4": 219.3, "partial/6.1": null, "sheaves/7": 0.570}
            ],
            "no_linux_figure": [{"bench": "alloc_peers", "metric": "x<y", "why": "no CONFIG_SLUB_STATS"}]
        }});
        let html = section(&h).expect("a section");
        assert_eq!(html.matches("<table class=\"twin\">").count(), 2, "{html}");
        assert!(html.contains("<th>linux-7.3.4</th><th>partial/6.1</th><th>sheaves/7</th>"));
        assert!(html.contains("<td class=\"num\">0.570</td>"), "{html}");
        assert!(html.contains("<td class=\"num\">-</td>"), "{html}");
        // Named and escaped, never a blank.
        assert!(
            html.contains("<code>x&lt;y</code>: no CONFIG_SLUB_STATS"),
            "{html}"
        );
        assert!(section(&json!({})).is_none());
        assert!(section(&json!({"side_by_side": {"rows": []}})).is_none());
    }
}
