//! The clean baseline: the suite runs once before the first builder; a test that already failed
//! is listed as pre-existing and blocks nothing, a new failure stops the workflow naming it, and
//! with no suite every failure is said to be suspect.

use baton_workflow::run::Outcome;

use crate::harness::*;

const SUITE: &str = "sh tests.sh";
const BEFORE: &str = "running 2 tests\ntest math::add ... ok\ntest math::div ... FAILED\n\ntest result: FAILED. 1 passed; 1 failed\n";

fn with_suite() -> Harness {
    let mut h = Harness::new();
    h.env.delegate.config.workflow.test_command = Some(SUITE.into());
    h
}

#[test]
fn a_test_failing_before_the_build_is_listed_as_pre_existing_and_blocks_nothing() {
    let h = with_suite();
    h.happy().command_output(SUITE, 101, BEFORE);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Completed { id, brief } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains(
            "pre-existing failures (failing before the build, not blamed on it): math::div"
        ),
        "{brief}"
    );
    // Before the builder; the builder's scenario; the verifier's; the suite again after its pass.
    assert_eq!(
        h.host_commands(),
        [SUITE, "test -s feature.txt", "test -f feature.txt", SUITE]
    );
    let a = h.artifact(id);
    assert_eq!(a["results"]["baseline"]["status"], "recorded");
    assert_eq!(
        a["results"]["baseline"]["failures"],
        serde_json::json!(["math::div"])
    );
    assert_eq!(a["results"]["baseline"]["total"], 2);
    assert_eq!(a["results"]["deps"]["status"], "skipped");
    let checks = &a["run"]["outputs"]["t4"]["host_checks"];
    assert_eq!(checks[1]["command"], SUITE);
    assert_eq!(checks[1]["ok"], true);
    assert_eq!(checks[1]["preexisting"], serde_json::json!(["math::div"]));
    let verify = &h.calls_of("integration-verifier")[0].prompt;
    assert!(
        verify.contains("## Baseline\nBefore this build `sh tests.sh` already had these tests failing: math::div. Only new failures block the phase"),
        "{verify}"
    );
    assert!(!h.calls_of("component-builder")[0]
        .prompt
        .contains("## Baseline"));
}

#[test]
fn a_new_failure_in_a_re_run_scenario_stops_the_workflow_naming_it() {
    let h = with_suite();
    h.happy().command_output(SUITE, 101, BEFORE).command_output(
        "test -f feature.txt",
        101,
        "test math::add ... FAILED\ntest math::div ... FAILED\n",
    );
    let o = h.build("add a feature file").unwrap();
    let Outcome::Failed { brief, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains("its scenario `test -f feature.txt` exits 101 with tests failing that passed before the build: math::add when baton ran it"),
        "{brief}"
    );
}

#[test]
fn without_a_suite_the_baseline_is_unavailable_and_says_every_failure_is_suspect() {
    let h = Harness::new();
    h.happy();
    let o = h.build("add a feature file").unwrap();
    let Outcome::Completed { id, brief } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains("baseline: unavailable (no test command"),
        "{brief}"
    );
    assert_eq!(
        h.artifact(id)["results"]["baseline"]["status"],
        "unavailable"
    );
    let verify = &h.calls_of("integration-verifier")[0].prompt;
    assert!(
        verify.contains("## Baseline\nNo clean baseline could be recorded (no test command"),
        "{verify}"
    );
    assert_eq!(
        h.host_commands(),
        ["test -s feature.txt", "test -f feature.txt"]
    );
}
