//! `baton route "request"`: the workflow a request would run as, the signals that decided it and
//! the rule. It reads no config, writes nothing and calls no model.

use anyhow::{bail, Result};
use baton_app::exit::Exit;
use baton_workflow::route::{route, route_as, Decision, WorkflowKind};
use clap::Args;

use crate::documents::RouteDocument;

#[derive(Args, Debug)]
pub struct RouteArgs {
    /// The request, as it would be given to a workflow.
    request: String,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// Take this workflow instead of routing: BUILD, DEBUG, PLAN, REVIEW, ORIENT, TRIAGE or
    /// CODEBASE-HEALTH.
    #[arg(long, value_name = "W")]
    workflow: Option<WorkflowKind>,
}

/// `rule: …`, and for a conflict the workflows in play.
fn rule_line(d: &Decision) -> String {
    let mut line = format!("rule: {}", d.rule);
    if d.conflict() {
        let names: Vec<&str> = d.contenders().iter().map(|w| w.as_str()).collect();
        line.push_str(&format!(" (conflict: {})", names.join(", ")));
    }
    line
}

pub fn run(args: RouteArgs) -> Result<Exit> {
    if args.request.trim().is_empty() {
        bail!("the request is empty: pass the request to route, e.g. baton route \"fix the failing test\"");
    }
    let decision = match args.workflow {
        Some(workflow) => route_as(&args.request, workflow),
        None => route(&args.request),
    };
    if args.json {
        crate::documents::print(&RouteDocument::of(&decision));
    } else {
        // Signal texts are the request's own words: one line each, terminal-safe.
        outln!("{}", baton_text::sanitize_line(&decision.headline()));
        outln!("{}", rule_line(&decision));
    }
    Ok(Exit::Ok)
}
