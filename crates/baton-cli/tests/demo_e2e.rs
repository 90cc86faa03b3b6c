//! `baton demo`, the README's first command: a whole BUILD workflow replayed offline in a temp
//! repository, with a review finding and one remediation cycle, ends verified.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_testkit::fixture::{assert_exit, Sandbox};

#[test]
fn the_demo_runs_a_whole_build_with_one_remediation_and_ends_verified() {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let o = sb.run(&["demo"]);
    assert_exit(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("-> BUILD workflow (signals: add)"), "{err}");
    assert!(out.contains("completed"), "{out}");
    assert!(out.contains("remediation cycles: 1"), "{out}");
    assert!(out.contains("proof: passed"), "{out}");
    assert!(out.contains("8 dispatches"), "{out}");
    // The remediation's fix is in the script the brief shows.
    assert!(out.contains("for arg in \"$@\"; do"), "{out}");
    // The dispatches, in order: the reviewer and hunter run together.
    for phase in [
        "t1 build-implement",
        "t2 build-review",
        "t3 build-hunt",
        "t7 build-implement",
        "t8 re-review",
        "t9 re-hunt",
        "t4 build-verify",
        "t5 build-doc-sync",
    ] {
        assert!(
            err.contains(&format!("{phase}: ")),
            "{phase} missing in\n{err}"
        );
    }
    // The brief lists the tasks in the order they ran, and names the host's own step
    // ([14/18]: id order, and a blank role for memory-finalize).
    let listed: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "tasks:")
        .skip(1)
        .take_while(|l| l.starts_with("  t"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        listed,
        ["t1", "t2", "t3", "t7", "t8", "t9", "t4", "t5", "t6"],
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("  t6 memory-finalize") && l.contains(" host")),
        "{out}"
    );
}
