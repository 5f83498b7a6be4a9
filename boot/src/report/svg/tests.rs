//! Tests of the charts: series, ticks and their labels, whiskers, hollow oversubscribed
//! points, exact series, and grouping records into charts.

use super::*;

fn chart(series: Vec<Series>, host_cpus: Option<usize>) -> String {
    line_chart(&Chart {
        id: "chart-x".into(),
        class: "chart exp-x".into(),
        title: "t <1>".into(),
        x_label: "CPUs".into(),
        y_label: "ops".into(),
        series,
        host_cpus,
    })
}

fn spread(x: f64, median: f64, min: f64, max: f64) -> Point {
    Point {
        x,
        median,
        min,
        max,
        n: 3,
    }
}

#[test]
fn chart_has_every_series_and_tick() {
    let svg = chart(
        vec![
            Series {
                name: "linux_default".into(),
                points: vec![
                    Point::single(2.0, 10.0),
                    Point::single(8.0, 4.0),
                    Point::single(4.0, 7.0),
                ],
                exact: false,
            },
            Series {
                name: "partial_64".into(),
                points: vec![
                    Point::single(2.0, 12.0),
                    Point::single(4.0, 11.0),
                    Point::single(8.0, 9.0),
                ],
                exact: false,
            },
        ],
        None,
    );
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.contains("id=\"chart-x\" class=\"chart exp-x\""),
        "{svg}"
    );
    assert_eq!(svg.matches("<polyline").count(), 2);
    // Six points and two legend markers; nothing hollow, no whisker, no band without a
    // host core count.
    assert_eq!(svg.matches("<circle").count(), 8);
    assert!(!svg.contains("hollow") && !svg.contains("whisker"), "{svg}");
    assert!(!svg.contains("oversubscribed"), "{svg}");
    assert!(svg.contains("t &lt;1&gt;"));
    assert!(svg.contains(">partial_64<") && svg.contains(">8<"));
}

#[test]
fn whiskers_span_min_to_max_and_oversubscribed_points_are_hollow() {
    let s = Series {
        name: "a".into(),
        points: vec![
            spread(2.0, 50.0, 40.0, 60.0),
            spread(4.0, 80.0, 80.0, 80.0),
            spread(8.0, 100.0, 90.0, 120.0),
        ],
        exact: false,
    };
    let svg = chart(vec![s.clone()], Some(2));
    // Two whiskers (the point whose reps agree has none), each from min to max (y axis
    // 0..150 in steps of 50).
    assert_eq!(svg.matches("class=\"whisker\"").count(), 2, "{svg}");
    let plot_h = HEIGHT - TOP - BOTTOM;
    let py = |y: f64| TOP + plot_h - y / 150.0 * plot_h;
    let x2 = LEFT + 2.0 / 8.0 * (WIDTH - LEFT - RIGHT - X_PAD);
    let whisker = format!("d=\"M{x2:.1},{:.1}V{:.1}", py(40.0), py(60.0));
    assert!(svg.contains(&whisker), "{whisker} in {svg}");
    assert!(svg.contains(">150<") && !svg.contains(">200<"), "{svg}");
    assert!(svg.contains("min..max over repetitions"), "{svg}");
    // 4 and 8 CPUs are above the host's 2 cores: hollow, over the band, named in the legend.
    assert_eq!(svg.matches("class=\"hollow\"").count(), 2, "{svg}");
    assert_eq!(svg.matches("class=\"oversubscribed\"").count(), 1, "{svg}");
    assert!(
        svg.contains("oversubscribed: 8 vCPUs &gt; 2 host cores"),
        "{svg}"
    );
    // Enough cores: nothing hollow, no band.
    let svg = chart(vec![s.clone()], Some(8));
    assert_eq!(svg.matches("hollow").count(), 0, "{svg}");
    assert!(!svg.contains("oversubscribed"), "{svg}");
    // A deterministic series is marked exact in the legend and never hollow.
    let exact = Series { exact: true, ..s };
    let svg = chart(vec![exact], None);
    assert!(svg.contains(">a (exact)<") && svg.contains("exact: repeats run to run"));
    assert!(!svg.contains("hollow"), "{svg}");
}

#[test]
fn tick_labels_are_short() {
    assert_eq!(tick_label(15_000_000.0), "15M");
    assert_eq!(tick_label(1_200.0), "1.2k");
    assert_eq!(tick_label(1_250.0), "1.25k");
    assert_eq!(tick_label(2.5e9), "2.5G");
    assert_eq!(tick_label(0.5), "0.5");
    assert_eq!(tick_label(0.1 + 0.2), "0.3");
    assert_eq!(tick_label(0.0), "0");
    assert_eq!(tick_label(-0.0), "0");
    assert_eq!(tick_label(800.0), "800");
    assert_eq!(tick_label(0.002), "0.002");
    assert_eq!(tick_label(-1500.0), "-1.5k");
}

#[test]
fn tick_labels_stay_clear_of_the_axes() {
    let svg = chart(
        vec![Series {
            name: "a".into(),
            points: vec![Point::single(1.0, 12e6), Point::single(2.0, 15e6)],
            exact: false,
        }],
        None,
    );
    // Y labels end TICK_GAP left of the y axis, x labels sit below the x axis.
    let y_tick = format!("class=\"ytick\" x=\"{:.1}\"", LEFT - TICK_GAP);
    assert_eq!(svg.matches(&y_tick).count(), 4, "0, 5M, 10M, 15M: {svg}");
    assert!(svg.contains(">15M<") && svg.contains(">5M<"), "{svg}");
    let axis_y = HEIGHT - BOTTOM;
    for l in svg.lines().filter(|l| l.contains("class=\"xtick\"")) {
        let y: f64 = l
            .split("class=\"xtick\"")
            .nth(1)
            .and_then(|t| t.split("y=\"").nth(1))
            .and_then(|t| t.split('"').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no y in {l}"));
        assert!(y - 12.0 >= axis_y + TICK_GAP / 2.0, "{l}");
    }
}

#[test]
fn nice_steps() {
    assert_eq!(nice_step(100.0, 5.0), 20.0);
    assert_eq!(nice_step(7.0, 5.0), 2.0);
    assert!((nice_step(0.9, 5.0) - 0.2).abs() < 1e-12);
}

#[test]
fn scaling_charts_group_by_bench_metric_boot() {
    let rec = |case: &str, cpus: u32, value: f64, boot: Boot, rep: u32| {
        BenchRecord::for_test(
            ["slub_list_lock", case, "ops_per_cpu", "ops_per_sec"],
            cpus,
            boot,
            rep,
            value,
        )
    };
    let mut rs = vec![
        rec("a", 2, 10.0, Boot::Tsc, 0),
        rec("a", 2, 12.0, Boot::Tsc, 1),
        rec("a", 8, 20.0, Boot::Tsc, 0),
        rec("a", 8, 30.0, Boot::Tsc, 1),
        rec("a", 2, 5.0, Boot::Det, 0),
        rec("a", 8, 6.0, Boot::Det, 0),
        rec("a", 1, 6.0, Boot::Icount, 0),
    ];
    rs.push(BenchRecord {
        kernel: "linux-6.1".into(),
        ..rs[0].clone()
    });
    rs.push(BenchRecord {
        kernel: "linux-6.1".into(),
        cpus: 8,
        ..rs[0].clone()
    });
    let charts = scaling(&rs, 2);
    let names: Vec<&str> = charts.iter().map(|c| c.file.as_str()).collect();
    // The one-CPU icount boot has no scaling chart.
    assert_eq!(
        names,
        [
            "slub_list_lock-ops_per_cpu-det.svg",
            "slub_list_lock-ops_per_cpu-tsc.svg"
        ]
    );
    let tsc = &charts[1].chart;
    assert_eq!(tsc.host_cpus, Some(2));
    assert_eq!(charts[0].chart.host_cpus, None);
    assert!(charts[0].chart.series.iter().all(|s| s.exact));
    let names: Vec<&str> = tsc.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a (numalab)", "a (linux-6.1)"]);
    let p = &tsc.series[0].points[1];
    assert_eq!(
        (p.x, p.median, p.min, p.max, p.n),
        (8.0, 25.0, 20.0, 30.0, 2)
    );
}
