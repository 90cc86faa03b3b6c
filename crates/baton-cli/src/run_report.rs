//! How `baton run` / `baton resume` end, on either engine: the outcome printed (or its JSON
//! document) and the exit code.

use baton_app::exit::Exit;
use baton_app::workflow::outcome_document;
use baton_workflow::run::{Outcome, RunError};

use crate::documents::ErrorDocument;

pub(crate) fn failed_json(json: bool, e: &RunError) -> Exit {
    let code = if e.is_refusal() {
        Exit::Refused
    } else {
        Exit::Failed
    };
    if json {
        crate::documents::print(&ErrorDocument::Workflow {
            message: e.to_string(),
        });
    }
    errln!("baton: {e}");
    code
}

/// Prints where a workflow stands (`--json`: its outcome document) and returns the exit code;
/// `temporal` names the engine in the command that answers a checkpoint.
pub(crate) fn report_outcome(
    json: bool,
    result: Result<Outcome, RunError>,
    signalled: bool,
    temporal: bool,
) -> Exit {
    let engine = if temporal { " --engine temporal" } else { "" };
    let outcome = match result {
        Ok(o) => o,
        Err(e) => return failed_json(json, &e),
    };
    if json {
        crate::documents::print(&outcome_document(&outcome));
    }
    match outcome {
        Outcome::Completed { brief, .. } => {
            if !json {
                outln!("{}", brief.trim_end());
            }
            Exit::Ok
        }
        Outcome::Checkpoint { id, checkpoint } => {
            if !json {
                outln!("{}", checkpoint.brief.trim_end());
                outln!("question: {}", checkpoint.question);
                if !checkpoint.options.is_empty() {
                    outln!("options: {}", checkpoint.options.join(" | "));
                }
                outln!("answer with: baton resume{engine} {id} --answer \"…\"");
            }
            Exit::Waiting
        }
        Outcome::Failed { id, brief } => {
            if !json {
                outln!("{}", brief.trim_end());
                if !temporal {
                    outln!(
                        "retry with guidance: baton resume {id} --answer \"…\"  (or --answer abort)"
                    );
                }
            }
            Exit::Failed
        }
        Outcome::Stopped { brief, .. } => {
            if !json {
                outln!("{}", brief.trim_end());
            }
            Exit::Failed
        }
        Outcome::Interrupted { id } => {
            errln!("baton: interrupted; continue with: baton resume {id}");
            if signalled {
                Exit::Interrupted
            } else {
                Exit::Failed
            }
        }
    }
}
