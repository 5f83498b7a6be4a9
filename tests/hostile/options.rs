//! End to end: an option value cannot carry a second option, and a knob
//! the chosen design does not read is refused naming both, before anything is built.

use super::script::{refused_in, scratch};

#[test]
fn a_set_or_axis_value_with_whitespace_is_refused_before_any_build() {
    let d = scratch("smuggle");
    let jobs = d.join("jobs.txt");
    let jobs_arg = jobs.display().to_string();
    // Each would otherwise put slub.max_order=99 (valid: 0..=10) on the kernel's command line
    // unchecked.
    let cases: [(&str, Vec<&str>); 4] = [
        (
            "--set value with a space",
            vec!["--set", "filter=slub slub.max_order=99", "--suite", "test"],
        ),
        (
            "bench --set value with a tab",
            vec![
                "bench",
                "--smoke",
                "--set",
                "filter=slub\tslub.max_order=99",
            ],
        ),
        (
            "soak --set value with a newline",
            vec!["soak", "--short", "--set", "filter=slub\nslub.max_order=99"],
        ),
        (
            "sweep axis value with a space",
            vec![
                "sweep",
                "--emit-jobs",
                &jobs_arg,
                "--axis",
                "filter=a,b slub.max_order=99",
                "--",
                "--smoke",
            ],
        ),
    ];
    for (label, args) in &cases {
        refused_in(&d, label, args, "whitespace or a control character");
    }
    assert!(!jobs.exists(), "a job list was written");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_knob_the_chosen_design_does_not_read_is_refused_naming_both() {
    let d = scratch("design-knob");
    let jobs = d.join("jobs.txt");
    let jobs_arg = jobs.display().to_string();
    refused_in(
        &d,
        "slub.cpu_partial under the default sheaves design",
        &["--set", "slub.cpu_partial=5", "--suite", "test"],
        "slub.cpu_partial=5 is ignored under slub.design=sheaves",
    );
    refused_in(
        &d,
        "bench: slub.sheaf_capacity under slub.design=partial",
        &[
            "bench",
            "--set",
            "slub.design=partial",
            "--set",
            "slub.sheaf_capacity=8",
        ],
        "slub.sheaf_capacity=8 is ignored under slub.design=partial",
    );
    refused_in(
        &d,
        "sweep: one combination sets a knob its design ignores",
        &[
            "sweep",
            "--emit-jobs",
            &jobs_arg,
            "--axis",
            "slub.design=partial,sheaves",
            "--",
            "--set",
            "slub.cpu_partial=5",
        ],
        "slub.cpu_partial=5 is ignored under slub.design=sheaves",
    );
    assert!(!jobs.exists(), "a job list was written");
    let _ = std::fs::remove_dir_all(&d);
}
