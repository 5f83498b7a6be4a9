//! One experiment's section of the report (element id `exp-NAME`): its table (per metric, case,
//! kernel, CPUs and boot: repetitions, median, min..max, ratio against the baseline case, unit,
//! how it was measured, with exact and oversubscribed rows marked) and its charts inline.

use super::page::{escape, link, table};
use crate::bench::MetricKind;
use crate::bench::{
    baseline_boots, baseline_for, catalog, fmt_value, ratio_text, BenchRecord, Boot, Spread,
};
use crate::report::svg::{line_chart, ScalingChart};
use std::collections::BTreeMap;

/// A row's identity: metric, kernel, case, CPUs, boot.
type RowKey = (String, String, String, u32, Boot);

/// How a row was measured (HTML): exact in a deterministic boot, else host time or a
/// host-dependent count, flagged when a contention figure ran on more CPUs than host cores.
fn how(r: &BenchRecord, host_cpus: usize) -> (String, bool) {
    let mut s = match (r.boot, r.kind()) {
        (Boot::Det, _) => "<span class=\"tag exact\">exact</span> det".to_string(),
        (Boot::Icount, _) => "<span class=\"tag exact\">exact</span> icount".to_string(),
        (_, MetricKind::Count) => "<span class=\"tag host\">host-dependent count</span>".into(),
        (_, _) => "<span class=\"tag host\">host time</span>".into(),
    };
    let over = r.is_contention() && r.cpus as usize > host_cpus;
    if over {
        s.push_str(&format!(
            " <span class=\"tag over\">OVERSUBSCRIBED</span> {} vCPUs &gt; {host_cpus} cores",
            r.cpus
        ));
    }
    if r.kvm {
        s.push_str(" <span class=\"tag host\">real cores</span> KVM");
    }
    (s, over)
}

/// The table of one experiment's records.
pub fn experiment_table(bench: &str, records: &[&BenchRecord], host_cpus: usize) -> String {
    let mut kernels: Vec<&str> = records.iter().map(|r| r.kernel.as_str()).collect();
    kernels.sort_unstable();
    kernels.dedup();
    let by_kernel = kernels.len() > 1 || kernels.iter().any(|k| *k != "numalab");
    let mut metrics: Vec<&str> = Vec::new();
    let mut cases: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut values: BTreeMap<RowKey, Vec<f64>> = BTreeMap::new();
    let mut first: BTreeMap<RowKey, &BenchRecord> = BTreeMap::new();
    for r in records {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
        let c = cases.entry(&r.kernel).or_default();
        if !c.contains(&r.case) {
            c.push(r.case.clone());
        }
        let key = (
            r.metric.clone(),
            r.kernel.clone(),
            r.case.clone(),
            r.cpus,
            r.boot,
        );
        values.entry(key.clone()).or_default().push(r.value);
        first.entry(key).or_insert(r);
    }
    let spread = |k: &RowKey| values.get(k).and_then(|v| Spread::of(v));
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for metric in metrics {
        let mut keys: Vec<&RowKey> = values.keys().filter(|k| k.0 == metric).collect();
        keys.sort_by_key(|k| {
            let kc = &cases[k.1.as_str()];
            (
                k.1 != "numalab",
                k.1.clone(),
                kc.iter().position(|c| *c == k.2),
                k.3,
                k.4,
            )
        });
        for (i, key) in keys.into_iter().enumerate() {
            let (Some(s), Some(r)) = (spread(key), first.get(key)) else {
                continue;
            };
            let kc = &cases[key.1.as_str()];
            let base_case = baseline_for(bench, &key.2, kc);
            let base = base_case.as_ref().and_then(|b| {
                baseline_boots(key.4).find_map(|boot| {
                    spread(&(key.0.clone(), key.1.clone(), b.clone(), key.3, boot))
                })
            });
            let is_base = base_case.as_deref() == Some(key.2.as_str());
            let ratio = ratio_text(key.4, &s, base.as_ref(), is_base);
            let (note, over) = how(r, host_cpus);
            let mut class: Vec<&str> = Vec::new();
            if i == 0 {
                class.push("first");
            }
            if key.4.deterministic() {
                class.push("exact");
            }
            if over {
                class.push("oversubscribed");
            }
            let mut cells = vec![format!("<code>{}</code>", escape(metric)), escape(&key.2)];
            if by_kernel {
                cells.push(escape(&key.1));
            }
            cells.extend([
                format!("{}", key.3),
                key.4.name().to_string(),
                format!("{}", s.n),
                fmt_value(s.median),
                escape(&s.range()),
                escape(&ratio),
                escape(&r.unit),
                note,
            ]);
            rows.push((class.join(" "), cells));
        }
    }
    let mut head = vec!["metric", "case"];
    if by_kernel {
        head.push("kernel");
    }
    head.extend([
        "cpus",
        "boot",
        "reps",
        "median",
        "min..max",
        "ratio",
        "unit",
        "how measured",
    ]);
    // Right-align the numeric columns: cpus, reps, median, min..max, ratio.
    let numeric: Vec<usize> = if by_kernel {
        vec![3, 5, 6, 7, 8]
    } else {
        vec![2, 4, 5, 6, 7]
    };
    table("results", &head, &numeric, &rows)
}

/// The section of experiment `bench`: heading, baseline, charts (inline SVG, each with a link
/// to its file in the run folder when `files` lists it), then the table.
pub fn section(
    bench: &str,
    records: &[&BenchRecord],
    host_cpus: usize,
    charts: &[&ScalingChart],
    files: &[String],
) -> String {
    let rule = catalog::find(bench).map_or("the first case printed".into(), |e| {
        format!("baseline case {}", e.baseline.rule())
    });
    let mut s = format!(
        "<section class=\"experiment\" id=\"exp-{0}\">\n<h2>{0}</h2>\n<p class=\"note\">{1} \
         measurements; median and min..max over the repetitions of each boot; ratio: median / \
         median of the {2} (same metric, CPUs and boot; <code>n.s.</code>: the min..max ranges \
         overlap, <code>1rep</code>: one repetition, no spread); <span class=\"tag exact\">\
         exact</span> rows come from the det/icount boots and repeat exactly.</p>\n",
        escape(bench),
        records.len(),
        escape(&rule)
    );
    if !charts.is_empty() {
        s.push_str("<div class=\"charts\">\n");
        for c in charts {
            s.push_str("<figure>\n");
            s.push_str(&line_chart(&c.chart));
            if files.contains(&c.file) {
                s.push_str(&format!(
                    "<figcaption>{}</figcaption>\n",
                    link(&c.file, &c.file)
                ));
            }
            s.push_str("</figure>\n");
        }
        s.push_str("</div>\n");
    }
    // A merged sweep: one table per variant (machine and options), never mixed.
    let mut variants: BTreeMap<Option<&str>, Vec<&BenchRecord>> = BTreeMap::new();
    for r in records {
        variants.entry(r.variant.as_deref()).or_default().push(r);
    }
    for (variant, mine) in &variants {
        if let Some(v) = variant {
            s.push_str(&format!("<h3>variant {}</h3>\n", escape(v)));
        }
        s.push_str(&experiment_table(bench, mine, host_cpus));
    }
    s.push_str("</section>\n");
    s
}
