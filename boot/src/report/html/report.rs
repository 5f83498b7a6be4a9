//! The run report's page: what ran (command, revision, date, host, options), the machine (the
//! kernel's `numactl -H` block, vCPUs), the boots, the seeds table, every experiment's section
//! (experiments.rs), the run folder's files as relative links, and the run folder's `proc/*`
//! text files shown in full.

use super::experiments;
use super::page::{escape, facts, link, page, table};
use crate::bench::{self, BenchRecord, Direction};
use crate::report::svg;
use serde_json::Value;
use std::collections::BTreeMap;

/// What the run folder holds, as paths relative to it (`/` separators), sorted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFiles {
    /// Serial logs: `tsc.log`, `det.log`, `linux-icount.log`, ...
    pub logs: Vec<String>,
    /// Chart files: `BENCH-METRIC-BOOT.svg`.
    pub charts: Vec<String>,
    /// Files under `proc/` with their text (shown in `<pre>` sections).
    pub proc: Vec<(String, String)>,
    /// `sys/kernel/slab` when the folder exists (linked, not listed).
    pub sysfs: Option<String>,
    /// Anything else (linked).
    pub other: Vec<String>,
    /// The `numactl -H` block of the first log that has one, and that log's name.
    pub numactl: Option<(String, Vec<String>)>,
    /// The `c2c-*.txt` files with their text (the traced side by side's hottest lines).
    pub c2c: Vec<(String, String)>,
}

/// The `numactl -H` block of a serial log's text (a saved log): from `available: N nodes` to
/// the last distance row (numalab_algo::wire::numactl reads it).
pub fn numactl_block(log: &str) -> Option<Vec<String>> {
    numalab_algo::wire::numactl::block(log.lines())
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// An argv as one shell line (single quotes around words that need them).
pub fn shell_line(argv: &[Value]) -> String {
    argv.iter()
        .map(|a| {
            let w = text(a);
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=,:+@%".contains(&b))
            {
                w
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn run_facts(h: &Value, records: usize) -> String {
    let command = h["command"]
        .as_array()
        .map_or("- (not in this result file)".into(), |a| {
            format!("<code>{}</code>", escape(&shell_line(a)))
        });
    let o = &h["options"];
    let sets = o["sets"]
        .as_array()
        .filter(|s| !s.is_empty())
        .map_or("-".into(), |s| {
            s.iter()
                .map(|x| format!("<code>{}</code>", escape(&text(x))))
                .collect::<Vec<_>>()
                .join(" ")
        });
    let over = if h["oversubscribed"].as_bool() == Some(true) {
        " <span class=\"tag over\">OVERSUBSCRIBED</span> (vCPUs take turns on the host cores; \
         contention figures are compressed)"
    } else {
        ""
    };
    let mut rows = vec![
        ("command", command),
        (
            "git revision",
            format!("<code>{}</code>", escape(&text(&h["git_rev"]))),
        ),
        ("date (UTC)", escape(&text(&h["date"]))),
        (
            "host",
            format!(
                "{}, {} cores",
                escape(&text(&h["host"])),
                escape(&text(&h["host_cpus"]))
            ),
        ),
        (
            "machine",
            format!(
                "topology {}, {} vCPUs (the most of any boot){over}",
                escape(&text(&h["topology"])),
                escape(&text(&h["vcpus"]))
            ),
        ),
        ("QEMU", escape(&text(&h["qemu"]))),
        ("accel (--accel)", accel_fact(h)),
        (
            "options",
            format!(
                "smoke {}, main job {}, reps {}, firmware {}, extra QEMU arguments {}",
                escape(&text(&o["smoke"])),
                escape(&text(&o["main_job"])),
                escape(&text(&h["reps"])),
                escape(&text(&o["firmware"])),
                o["extra_qemu_args"]
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .map_or("none".into(), |a| format!(
                        "<code>{}</code>",
                        escape(&shell_line(a))
                    ))
            ),
        ),
        ("kernel options (--set)", sets),
        ("measurements", format!("{records}")),
    ];
    if !h["kernel"].is_null() {
        rows.push((
            "kernels",
            format!("--kernel {}", escape(&text(&h["kernel"]))),
        ));
    }
    facts(&rows)
}

/// `--accel` and where the boots ran: "tcg", or "kvm: tsc boots on real cores (KVM), det and
/// icount boots under TCG" (a header without the field: a run from before `--accel`, TCG).
fn accel_fact(h: &Value) -> String {
    let accel: String = match h["accel"].as_str() {
        Some("kvm") => "kvm: tsc and uma boots on real cores (KVM, <code>-cpu host</code>), \
                        det and icount boots under TCG (exact counts need -icount)"
            .into(),
        Some(other) => escape(other),
        None => "tcg".into(),
    };
    let host = match h["host_nodes"].as_u64() {
        Some(n) => format!("; host nodes {n}"),
        None => String::new(),
    };
    let placed = match h["placement"].as_array() {
        Some(lines) if !lines.is_empty() => format!(
            "; placement: {}",
            lines
                .iter()
                .map(|l| escape(&text(l)))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        _ => "; not pinned".into(),
    };
    format!("{accel}{host}{placed}")
}

fn boots_table(h: &Value) -> String {
    let mut rows = Vec::new();
    let numalab = h["boots"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| ("numalab", b));
    let linux = h["linux_boots"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| (b["kernel"].as_str().unwrap_or("linux"), b));
    for (kernel, b) in numalab.chain(linux) {
        let verdict = text(&b["verdict"]);
        let tag = if verdict == "Pass" { "pass" } else { "fail" };
        let kernel = match b["release"].as_str() {
            Some(r) => format!("{kernel} {r}"),
            None => kernel.to_string(),
        };
        let qemu = b["qemu_args"]
            .as_array()
            .map(|a| shell_line(a))
            .unwrap_or_default();
        rows.push((
            String::new(),
            vec![
                escape(&kernel),
                escape(&text(&b["boot"])),
                escape(&b["rep"].as_u64().map_or("-".into(), |r| r.to_string())),
                escape(&text(&b["topology"])),
                escape(&text(&b["vcpus"])),
                escape(&text(&b["accel"])),
                format!("<span class=\"tag {tag}\">{}</span>", escape(&verdict)),
                b["seconds"]
                    .as_f64()
                    .map_or("-".into(), |s| format!("{s:.1}")),
                format!("<code>{}</code>", escape(&text(&b["kernel_cmdline"]))),
                format!(
                    "<details><summary>QEMU command</summary><code>{}</code></details>",
                    escape(&qemu)
                ),
            ],
        ));
    }
    table(
        "boots",
        &[
            "kernel",
            "boot",
            "rep",
            "topology",
            "vCPUs",
            "accel",
            "verdict",
            "seconds",
            "kernel command line",
            "QEMU",
        ],
        &[2, 4, 7],
        &rows,
    )
}

fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}x")
    } else {
        "inf".into()
    }
}

/// The seeds table: each Linux thread's figure beside this run's ratio of the same change.
fn seeds(records: &[BenchRecord]) -> String {
    let present = |bench: &str| records.iter().any(|r| r.bench == bench);
    let mut rows = Vec::new();
    for row in bench::seed_rows() {
        let t = row.thread;
        let m = bench::measure(records, &row);
        let exact = t.boot.deterministic() && t.base_boot.deterministic();
        let numalab = match &m {
            Some(m) if exact => {
                format!("{} <span class=\"tag exact\">exact</span>", ratio(m.ratio))
            }
            Some(m) if m.reps < 2 => format!("{} (1 rep)", ratio(m.ratio)),
            Some(m) => format!("{} ({}..{})", ratio(m.ratio), ratio(m.low), ratio(m.high)),
            None => "-".into(),
        };
        let boots = if t.boot == t.base_boot {
            t.boot.name().to_string()
        } else {
            format!("{} / {}", t.boot.name(), t.base_boot.name())
        };
        let thread = if t.thread_ratio.is_finite() {
            escape(&format!("{} = {}", t.thread_figure, ratio(t.thread_ratio)))
        } else {
            format!("{} = &gt;1x", escape(t.thread_figure))
        };
        let d = bench::direction(t.thread_ratio, m.as_ref());
        let tag = match d {
            Direction::Agrees => "<span class=\"tag pass\">agrees</span>".to_string(),
            Direction::Disagrees | Direction::NoEffect => {
                format!("<span class=\"tag fail\">{}</span>", escape(d.name()))
            }
            other => escape(other.name()),
        };
        rows.push((
            String::new(),
            vec![
                escape(t.seed),
                if present(row.bench) {
                    format!("<a href=\"#exp-{0}\">{0}</a>", escape(row.bench))
                } else {
                    escape(row.bench)
                },
                format!(
                    "{} / {} <code>{}</code> ({})",
                    escape(t.case),
                    escape(t.base),
                    escape(t.metric),
                    escape(&boots)
                ),
                thread,
                numalab,
                m.as_ref().map_or("-".into(), |m| m.cpus.to_string()),
                tag,
            ],
        ));
    }
    table(
        "seeds",
        &[
            "seed",
            "bench",
            "change (case / baseline, metric, boot)",
            "thread",
            "numalab (median, min..max)",
            "cpus",
            "direction",
        ],
        &[5],
        &rows,
    )
}

fn files_section(jsonl_href: &str, jsonl_name: &str, files: &RunFiles) -> String {
    let mut items = vec![format!(
        "<li>result file: {}</li>",
        link(jsonl_href, jsonl_name)
    )];
    let list = |title: &str, names: &[String]| -> String {
        let links: Vec<String> = names.iter().map(|n| link(n, n)).collect();
        format!("<li>{title}: {}</li>", links.join(", "))
    };
    if !files.logs.is_empty() {
        items.push(list("serial logs", &files.logs));
    }
    if !files.charts.is_empty() {
        items.push(list("charts (SVG)", &files.charts));
    }
    if !files.proc.is_empty() {
        let names: Vec<String> = files.proc.iter().map(|(n, _)| n.clone()).collect();
        items.push(list("proc files", &names));
    }
    if let Some(s) = &files.sysfs {
        items.push(format!(
            "<li>SLUB's sysfs tree: {}</li>",
            link(&format!("{s}/"), &format!("{s}/"))
        ));
    }
    if !files.other.is_empty() {
        items.push(list("other files", &files.other));
    }
    format!(
        "<section id=\"files\">\n<h2>Files</h2>\n<ul>\n{}\n</ul>\n</section>\n",
        items.join("\n")
    )
}

/// The whole page for a run: `header` and `records` from the JSONL (linked as `jsonl_href`,
/// shown as `jsonl_name`), `files` from the run folder.
pub fn render(
    header: Option<&Value>,
    records: &[BenchRecord],
    jsonl_href: &str,
    jsonl_name: &str,
    files: &RunFiles,
) -> String {
    let null = Value::Null;
    let h = header.unwrap_or(&null);
    let host_cpus = h["host_cpus"].as_u64().map_or(usize::MAX, |c| c as usize);
    let rev = text(&h["git_rev"]);
    let date = text(&h["date"]);
    let mut by_bench: BTreeMap<&str, Vec<&BenchRecord>> = BTreeMap::new();
    for r in records {
        by_bench.entry(&r.bench).or_default().push(r);
    }
    // A merged sweep's records carry their variant: one chart over them would draw different
    // machines and options as repetitions of one point, so its charts are the jobs' own (in
    // each job's folder) and the tables split by variant.
    let merged = records.iter().any(|r| r.variant.is_some());
    let charts = if merged {
        Vec::new()
    } else {
        svg::scaling(records, host_cpus)
    };
    let mut b = format!(
        "<h1>numalab bench run {} ({})</h1>\n<nav><ul>\n<li><a href=\"#run\">run</a></li>\n\
         <li><a href=\"#machine\">machine</a></li>\n<li><a href=\"#boots\">boots</a></li>\n\
         <li><a href=\"#seeds\">seeds</a></li>\n",
        escape(&rev),
        escape(&date)
    );
    if !h["side_by_side"]["rows"]
        .as_array()
        .is_none_or(|r| r.is_empty())
    {
        b.push_str("<li><a href=\"#twin\">Linux twin</a></li>\n");
    }
    // The traced side by side of a twin run (run/twin/traced.rs).
    let traced = super::twin::traced_section(h, records, &files.c2c);
    if traced.is_some() {
        b.push_str("<li><a href=\"#twin-traced\">Linux twin, traced</a></li>\n");
    }
    for bench in by_bench.keys() {
        b.push_str(&format!(
            "<li><a href=\"#exp-{0}\">{0}</a></li>\n",
            escape(bench)
        ));
    }
    if !files.proc.is_empty() {
        b.push_str("<li><a href=\"#proc\">proc files</a></li>\n");
    }
    b.push_str("<li><a href=\"#files\">files</a></li>\n</ul></nav>\n");
    if header.is_none() {
        b.push_str("<p class=\"note\">The result file has no header record.</p>\n");
    }
    b.push_str("<section id=\"run\">\n<h2>Run</h2>\n");
    b.push_str(&run_facts(h, records.len()));
    b.push_str("</section>\n<section id=\"machine\">\n<h2>Machine</h2>\n");
    match &files.numactl {
        Some((log, block)) => b.push_str(&format!(
            "<p class=\"note\">{} vCPUs in the largest boot; the NUMA machine the kernel found \
             in ACPI, as it printed it in the format of <code>numactl -H</code> ({}):</p>\n\
             <pre class=\"numactl\">{}</pre>\n",
            escape(&text(&h["vcpus"])),
            link(log, log),
            escape(&block.join("\n"))
        )),
        None => b.push_str("<p class=\"note\">No log of this run has a numactl -H block.</p>\n"),
    }
    b.push_str("</section>\n<section id=\"boots\">\n<h2>Boots</h2>\n");
    b.push_str(&boots_table(h));
    if let Some(twin) = super::twin::section(h) {
        b.push_str("</section>\n");
        b.push_str(twin.trim_end_matches("</section>\n"));
    }
    if let Some(traced) = traced {
        b.push_str("</section>\n");
        b.push_str(traced.trim_end_matches("</section>\n"));
    }
    b.push_str(
        "</section>\n<section id=\"seeds\">\n<h2>Seeds</h2>\n<p class=\"note\">Each \
        Linux thread's own figure as a ratio (case / baseline) beside this run's; direction: \
        both on the same side of 1x (docs/linux-reference.md).</p>\n",
    );
    let numalab: Vec<BenchRecord> = records
        .iter()
        .filter(|r| r.kernel == "numalab")
        .cloned()
        .collect();
    b.push_str(&seeds(&numalab));
    // The cost model of the modelled rows (the JSONL header's traced boots, docs/costs.md).
    let mut models: Vec<String> = Vec::new();
    for boot in h["boots"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        if let Some(m) = boot["cost_model"].as_str() {
            if !models.iter().any(|x| x == m) {
                models.push(m.to_string());
            }
        }
    }
    if !models.is_empty() {
        b.push_str(&format!(
            "<p>modelled rows: cost model {}</p>\n",
            escape(&models.join("; "))
        ));
    }
    b.push_str("</section>\n");
    for (bench, rows) in &by_bench {
        let mine: Vec<&svg::ScalingChart> = charts.iter().filter(|c| c.bench == *bench).collect();
        b.push_str(&experiments::section(
            bench,
            rows,
            host_cpus,
            &mine,
            &files.charts,
        ));
    }
    if !files.proc.is_empty() {
        b.push_str("<section id=\"proc\">\n<h2>proc files</h2>\n");
        for (name, body) in &files.proc {
            let id = name.replace(['/', '.'], "-");
            b.push_str(&format!(
                "<h3 id=\"{}\">{}</h3>\n<pre>{}</pre>\n",
                escape(&id),
                link(name, name),
                escape(body)
            ));
        }
        b.push_str("</section>\n");
    }
    b.push_str(&files_section(jsonl_href, jsonl_name, files));
    page(&format!("numalab bench {rev} {date}"), &b)
}
