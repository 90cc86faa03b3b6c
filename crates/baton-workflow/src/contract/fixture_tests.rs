//! The `agent_outputs` of cc10x's router conformance fixtures (`../shared/conformance/cc10x/`
//! beside the repository) as realistic inputs. The fixtures hold contracts already lifted out of
//! agent output, and most are excerpts: the fields a scenario turns on, not every field the
//! registry requires. So each write-role contract is checked twice — whole, where the missing
//! fields must be named exactly, and as an excerpt through the pass conditions — and read-only
//! contracts are rendered back into the text an agent would write.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::*;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/cc10x")
}

/// Each fixture's `agent_outputs`, by fixture id; `None` (with a note) when the folder is absent.
fn fixtures() -> Option<Vec<(String, Map<String, Value>)>> {
    let dir = fixture_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "note: {} is absent; the conformance fixture tests pass without it",
            dir.display()
        );
        return None;
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if let Some(Value::Object(outputs)) = doc.get("agent_outputs") {
            let id = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((id, outputs.clone()));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

fn role_of(key: &str) -> Option<Role> {
    Some(match key {
        "builder_contract" => Role::ComponentBuilder,
        "investigator_contract" => Role::BugInvestigator,
        "planner_contract" => Role::Planner,
        "doc_syncer_contract" => Role::DocSyncer,
        "verifier_contract" => Role::IntegrationVerifier,
        "reviewer_contract" => Role::CodeReviewer,
        "plan_gap_review_contract" => Role::PlanGapReviewer,
        _ => return None,
    })
}

fn router_block(fields: &Map<String, Value>) -> String {
    // JSON is YAML, so the fixture's own text can stand in the fenced block.
    format!(
        "### Router Contract (MACHINE-READABLE)\n```yaml\n{}\n```\n",
        serde_json::to_string_pretty(fields).unwrap()
    )
}

/// What baton makes of one fixture contract, in one line.
fn verdict(role: Role, fields: &Map<String, Value>) -> String {
    if role.is_read_only() {
        let output = match role {
            Role::CodeReviewer => {
                let heading = fields["heading"].as_str().unwrap();
                let mut lines = vec!["Reviewed the change.".to_string(), heading.to_string()];
                for (k, v) in fields.iter().filter(|(k, _)| *k != "heading") {
                    lines.push(format!(
                        "{k}: {}",
                        v.as_str().map_or(v.to_string(), str::to_string)
                    ));
                }
                lines.join("\n")
            }
            // The fixtures give the verifier's accounting without its status: the envelope
            // claims what the counts say.
            Role::IntegrationVerifier => {
                let failed = fields["SCENARIOS_FAILED"].as_u64().unwrap();
                let s = if failed == 0 { "PASS" } else { "FAIL" };
                format!(
                    "CONTRACT {{\"s\":\"{s}\",\"b\":false,\"cr\":0}}\n{}",
                    router_block(fields)
                )
            }
            _ => {
                let s = fields["STATUS"].as_str().unwrap();
                let bf = fields["BLOCKING_FINDINGS_COUNT"].as_u64().unwrap();
                format!(
                    "CONTRACT {{\"s\":\"{s}\",\"b\":{},\"bf\":{bf}}}\n{}",
                    bf > 0,
                    router_block(fields)
                )
            }
        };
        return match parse(role, &output) {
            Ok(c) => format!("{:?} via {:?}", c.outcome, c.source),
            Err(e) => format!("error: {e}"),
        };
    }
    let whole = parse(
        role,
        &format!("Report written.\n\n{}", router_block(fields)),
    );
    let missing = write::missing_fields(role, fields);
    match whole {
        Ok(c) => assert!(missing.is_empty(), "{c:?}"),
        Err(ContractError::MissingFields { fields: named, .. }) => assert_eq!(named, missing),
        Err(e) => return format!("error: {e}"),
    }
    match write::check_typed(role, fields, Vec::new()) {
        Ok(c) => format!(
            "{:?}{}",
            c.outcome,
            if missing.is_empty() {
                " (complete)"
            } else {
                ""
            }
        ),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn conformance_fixture_contracts() {
    let Some(fixtures) = fixtures() else { return };
    let mut seen = Vec::new();
    for (id, outputs) in &fixtures {
        for (key, value) in outputs {
            let (Some(role), Value::Object(fields)) = (role_of(key), value) else {
                continue;
            };
            seen.push(format!("{id} {key}: {}", verdict(role, fields)));
        }
    }
    // What each fixture expects of the router, as baton reads the contract. The planner
    // excerpts leave out CONFIDENCE, which a plan needs at 50 or more, so their pass is refused
    // for that alone; their other pass conditions hold.
    let expected = [
        "build-checkpoint-decision builder_contract: NotPassed { status: \"FAIL\" }",
        "build-doc-sync-happy-path doc_syncer_contract: Pass (complete)",
        "build-doc-sync-happy-path verifier_contract: Pass via Envelope",
        "build-doc-sync-skipped doc_syncer_contract: Pass (complete)",
        "build-happy-path builder_contract: Pass",
        "build-happy-path verifier_contract: Pass via Envelope",
        "build-phase-blocked builder_contract: NotPassed { status: \"FAIL\" }",
        "debug-fixed investigator_contract: Pass",
        "debug-fixed-no-variant investigator_contract: Pass",
        "debug-research investigator_contract: NotPassed { status: \"BLOCKED\" }",
        "plan-clarification planner_contract: NotPassed { status: \"NEEDS_CLARIFICATION\" }",
        "plan-code-contradiction planner_contract: NotPassed { status: \"NEEDS_CLARIFICATION\" }",
        "plan-decision-rfc planner_contract: PassRefused { unmet: [\"CONFIDENCE must be at least 50\"] }",
        "plan-fresh-review-exhausted plan_gap_review_contract: NotPassed { status: \"FINDINGS\" } via Envelope",
        "plan-fresh-review-findings plan_gap_review_contract: NotPassed { status: \"FINDINGS\" } via Envelope",
        "plan-fresh-review-pass plan_gap_review_contract: Pass via Envelope",
        "plan-full planner_contract: PassRefused { unmet: [\"CONFIDENCE must be at least 50\"] }",
        "plan-repo-alignment planner_contract: PassRefused { unmet: [\"CONFIDENCE must be at least 50\"] }",
        "review-advisory reviewer_contract: NotPassed { status: \"CHANGES_REQUESTED\" } via Heading",
        // The fixture expects stop_invalid_output: the verifier's counts claim two passes.
        "verify-fail-closed verifier_contract: error: integration-verifier: the scenario accounting does not reconcile: \
         SCENARIOS_PASSED is 2 but 1 row has status PASS; SCENARIOS_FAILED is 0 but 1 row has status FAIL; \
         scenario \"Invoice retry\" has no expected; scenario \"Invoice retry\" has no EVIDENCE entry; \
         SCENARIOS_TOTAL is 2 but EVIDENCE.scenarios has 1 entry",
    ];
    for (got, want) in seen.iter().zip(expected) {
        assert!(got.starts_with(want), "got:  {got}\nwant: {want}");
    }
    assert_eq!(seen.len(), expected.len(), "{seen:#?}");
}
