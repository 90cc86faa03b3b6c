//! The tiebreak of a routing conflict: when the request leads with two deliverables and only the
//! priority table picked one, a small model (the `fast` class) may choose among the workflows in
//! play. It answers one strict JSON object; anything else leaves the rules' choice standing. The
//! call itself is made by the caller (`baton run`); this module holds the prompt and the check.

use super::{Decision, Rule, WorkflowKind};

/// The instructions of the tiebreak call.
pub const SYSTEM: &str = "You route a software request to one workflow. Answer with one JSON \
object and nothing else: {\"workflow\": \"NAME\"}, where NAME is one of the workflows offered. \
Choose the one that produces what the request mainly asks for.";

/// What each workflow is for, as the tiebreak model is told.
fn purpose(w: WorkflowKind) -> &'static str {
    match w {
        WorkflowKind::Build => "new or changed functionality",
        WorkflowKind::Debug => "diagnosing and repairing broken behaviour",
        WorkflowKind::Plan => "a reviewed plan, before any code",
        WorkflowKind::Review => "an advisory review of existing code",
        WorkflowKind::Orient => "a read-only explanation of existing code",
        WorkflowKind::Triage => "categorising a bug report",
        WorkflowKind::CodebaseHealth => "an architecture health scan",
    }
}

/// The user message of the tiebreak call.
pub fn prompt(request: &str, contenders: &[WorkflowKind]) -> String {
    let mut p = format!("Request: {}\n\nWorkflows:\n", request.trim());
    for w in contenders {
        p.push_str(&format!("- {}: {}\n", w.as_str(), purpose(*w)));
    }
    p
}

/// Reads the model's answer: exactly `{"workflow": "NAME"}` with NAME one of `contenders` (any
/// case). The error says what was wrong with it.
pub fn parse(text: &str, contenders: &[WorkflowKind]) -> Result<WorkflowKind, String> {
    let value: serde_json::Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("not one JSON object ({e})"))?;
    let obj = value
        .as_object()
        .ok_or_else(|| "not a JSON object".to_string())?;
    if obj.len() != 1 {
        return Err(format!(
            "{} keys where only `workflow` is allowed",
            obj.len()
        ));
    }
    let name = obj
        .get("workflow")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| "no string `workflow`".to_string())?;
    let w: WorkflowKind = name
        .parse()
        .map_err(|_| format!("{name:?} is not a workflow"))?;
    if !contenders.contains(&w) {
        return Err(format!(
            "{} was not one of the workflows offered",
            w.as_str()
        ));
    }
    Ok(w)
}

impl Decision {
    /// This decision with the tiebreak's choice: the workflow chosen and the rule `tiebreak`
    /// (the contenders stay, so the conflict is still shown).
    pub fn with_tiebreak(mut self, workflow: WorkflowKind) -> Decision {
        self.workflow = workflow;
        self.rule = Rule::Tiebreak;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::route;

    #[test]
    fn only_a_strict_answer_among_the_contenders_counts() {
        let c = [WorkflowKind::Debug, WorkflowKind::Plan];
        assert_eq!(parse(r#"{"workflow": "PLAN"}"#, &c), Ok(WorkflowKind::Plan));
        assert_eq!(
            parse(" {\"workflow\":\"debug\"}\n", &c),
            Ok(WorkflowKind::Debug)
        );
        assert!(parse(r#"{"workflow": "BUILD"}"#, &c)
            .unwrap_err()
            .contains("not one of"));
        assert!(parse("PLAN", &c).is_err());
        assert!(parse("```json\n{\"workflow\": \"PLAN\"}\n```", &c).is_err());
        assert!(parse(r#"{"workflow": "PLAN", "why": "x"}"#, &c).is_err());
        assert!(parse(r#"{"workflow": "SHIP"}"#, &c)
            .unwrap_err()
            .contains("not a workflow"));
    }

    #[test]
    fn a_tiebreak_keeps_the_conflict_and_names_its_rule() {
        let d = route("plan the storage migration and fix the flaky upload");
        assert!(d.conflict());
        let p = prompt("plan it and fix it", d.contenders());
        assert!(p.contains("- DEBUG: ") && p.contains("- PLAN: "), "{p}");
        let t = d.with_tiebreak(WorkflowKind::Plan);
        assert_eq!(t.workflow, WorkflowKind::Plan);
        assert_eq!(t.rule.to_string(), "tiebreak by the fast model");
        assert!(t.conflict());
    }
}
