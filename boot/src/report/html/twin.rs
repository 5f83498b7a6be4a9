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

/// The traced side by side of a twin run (run/twin/traced.rs) from its records and its run
/// folder's c2c files (`(name, text)`), or None for a run without the twin or without det
/// trace records.
pub fn traced_section(
    h: &Value,
    records: &[crate::bench::BenchRecord],
    c2c_files: &[(String, String)],
) -> Option<String> {
    use crate::report::twin_traced as traced;
    let t = h["side_by_side"].as_object()?;
    let c2c = traced::c2c_of_folder(c2c_files, records);
    let design = t
        .get("numalab_design")
        .and_then(Value::as_str)
        .unwrap_or("sheaves");
    let html = traced::render(records, &c2c, design).html;
    (!html.is_empty()).then_some(html)
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

    #[test]
    fn traced_section_from_the_run_folder() {
        use crate::bench::{BenchRecord, Boot};
        let rec = |kernel: &str, case: &str, value: f64| BenchRecord {
            kernel: kernel.into(),
            ..BenchRecord::for_test(
                ["slub_list_lock", case, "hitm_remote_per_kop", "hitm"],
                8,
                Boot::Det,
                0,
                value,
            )
        };
        let records = vec![
            rec("numalab", "linux_default", 30.0),
            rec("linux-6.1.192", "linux/default", 60.0),
        ];
        let dir = std::env::temp_dir().join(format!("numalab-traced-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let run = dir.join("20260101-000000-abc");
        std::fs::create_dir_all(&run).unwrap();
        let c2c = "=================================================\n  \
                   slub_list_lock linux/default cpus 8 (region 0xffffffffc0a01000)\n\
                   =================================================\n\
                   # Index  Address\n      0  0xffff888003641380     0       1  100.00%      \
                   461      152      309     3900     1798     1498      604      462  \
                   numalab_sll node 0 list_lock<a>\n";
        std::fs::write(run.join("c2c-linux-det.txt"), c2c).unwrap();
        let mut text = json!({"record": "header", "kernel": "all",
            "side_by_side": {"numalab_design": "sheaves", "rows": []}})
        .to_string();
        for r in &records {
            text.push_str(&format!("\n{}", r.to_json()));
        }
        let jsonl = dir.join("20260101-000000-abc.jsonl");
        std::fs::write(&jsonl, text).unwrap();
        let page =
            std::fs::read_to_string(crate::report::html::write_report(&jsonl, &run).unwrap())
                .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(page.contains("<a href=\"#twin-traced\">"), "{page}");
        assert!(page.contains("<section id=\"twin-traced\">"), "{page}");
        // The Linux boot's hottest line, named and escaped; numalab's ratio to it.
        assert!(
            page.contains("numalab_sll node 0 list_lock&lt;a&gt;"),
            "{page}"
        );
        assert!(page.contains("<td class=\"num\">0.500</td>"), "{page}");
        // No twin header: no section.
        let none = super::traced_section(&json!({}), &records, &[]);
        assert!(none.is_none());
    }
}
