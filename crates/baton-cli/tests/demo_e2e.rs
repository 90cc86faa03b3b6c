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
}
