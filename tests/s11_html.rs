//! Layer 10: the HTML report of a real bench run (boot/src/report/html/) in a real browser. The smoke
//! benchmarks of s09_bench.rs (booted once for both files, no boot of its own) are written as
//! `qemu-run.sh bench` writes them (JSONL, logs, charts, index.html) into a temp folder; headless
//! Chromium (Debian's `chromium`, installed by `./qemu-run.sh setup --test`) takes a screenshot
//! of the page, which must be a PNG that is not blank, and dumps its DOM, which must hold every
//! experiment's section and every chart of that run.

use numalab_boot::bench::BenchRecord;
use numalab_boot::report::svg;
use numalab_boot::run::{self, Runs};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser, or a failure that says how to install it.
fn chromium() -> &'static str {
    let ok = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "chromium is missing: run `./qemu-run.sh setup --test` (it installs the packages only the \
         tests need) and run this test again"
    );
    "chromium"
}

/// Runs headless Chromium on `page` with `args` (a fresh profile in `profile`); its stdout.
fn headless(page: &Path, profile: &Path, args: &[String]) -> Vec<u8> {
    let url = format!("file://{}", page.display());
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(&url)
        .output()
        .expect("chromium starts");
    assert!(
        out.status.success(),
        "chromium {args:?} {url} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Distinct colours and the share of pixels that are not the page's white background.
fn pixels(png_file: &Path) -> (u32, u32, usize, f64) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_file).expect("screenshot exists"),
    ));
    let mut reader = decoder.read_info().expect("the screenshot is a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("the PNG decodes");
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "{info:?}");
    let data = &buf[..info.buffer_size()];
    let mut colours = BTreeSet::new();
    let mut ink = 0usize;
    let total = (info.width * info.height) as usize;
    for px in data.chunks_exact(channels) {
        let rgb = [px[0], px[1.min(channels - 1)], px[2.min(channels - 1)]];
        colours.insert(rgb);
        if rgb != [255, 255, 255] {
            ink += 1;
        }
    }
    (
        info.width,
        info.height,
        colours.len(),
        ink as f64 / total as f64,
    )
}

#[test]
fn s11_report_of_a_smoke_run_renders_in_headless_chromium() {
    chromium();
    let (args, runs) = super::s09_bench::smoke_runs();
    for r in runs {
        assert!(r.outcome.passed(), "{}", r.outcome.failure_report());
    }
    let dir = std::env::temp_dir().join(format!("numalab-s10-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut args = args.clone();
    args.out_dir = Some(dir.clone());
    let all: Vec<BenchRecord> = runs.iter().flat_map(|r| r.records.clone()).collect();
    let written = run::results::write_results(
        &args,
        &Runs {
            numalab: runs.clone(),
            linux: Vec::new(),
            image: PathBuf::from("-"),
        },
        &all,
    )
    .expect("results written");
    let index = written
        .iter()
        .find(|f| f.ends_with("index.html"))
        .unwrap_or_else(|| panic!("no index.html among {written:?}"))
        .clone();
    // The screenshot: a PNG of the window's size with text, tables and charts on it.
    let shot = dir.join("report.png");
    let profile = dir.join("chromium-profile");
    headless(
        &index,
        &profile,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,4000".into(),
        ],
    );
    let (w, h, colours, ink) = pixels(&shot);
    assert_eq!((w, h), (1280, 4000), "screenshot size");
    assert!(
        colours >= 50,
        "only {colours} colours: a blank page? {}",
        shot.display()
    );
    assert!(
        ink > 0.02,
        "only {:.2}% of the page is not white: {}",
        ink * 100.0,
        shot.display()
    );
    // The same check rejects a blank page.
    let blank = dir.join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>\n").expect("blank page");
    let blank_shot = dir.join("blank.png");
    headless(
        &blank,
        &profile,
        &[
            format!("--screenshot={}", blank_shot.display()),
            "--window-size=1280,4000".into(),
        ],
    );
    let (_, _, colours, ink) = pixels(&blank_shot);
    assert!(
        colours < 50 && ink <= 0.02,
        "a blank page passes: {colours} colours, {ink}"
    );
    // The DOM: every experiment's section and every chart of this run, inline.
    let dom = String::from_utf8(headless(&index, &profile, &["--dump-dom".into()]))
        .expect("the DOM is UTF-8");
    let benches: BTreeSet<&str> = all.iter().map(|r| r.bench.as_str()).collect();
    assert!(benches.len() >= 5, "{benches:?}");
    for b in &benches {
        assert!(
            dom.contains(&format!("id=\"exp-{b}\"")),
            "no section exp-{b} in the DOM"
        );
    }
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let charts = svg::scaling(&all, host_cpus);
    assert!(!charts.is_empty(), "the smoke run has no scaling chart");
    for c in &charts {
        let svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{}\"",
            c.chart.id
        );
        assert!(
            dom.contains(&svg),
            "no inline chart {} in the DOM",
            c.chart.id
        );
        assert!(dom.contains(&format!("class=\"chart exp-{}\"", c.bench)));
        assert!(
            index.with_file_name(&c.file).is_file(),
            "{} not written",
            c.file
        );
    }
    for s in [
        "id=\"seeds\"",
        "id=\"machine\"",
        "available: 4 nodes (0-3)",
        "tsc.log",
    ] {
        assert!(dom.contains(s), "{s} not in the DOM");
    }
    std::fs::remove_dir_all(&dir).expect("temp folder removed");
}
