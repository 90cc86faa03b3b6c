//! The participants' routing tools as the model sees them — the Coordinator's `delegate`, `unit`
//! and `act_bounded`, the Executor's `return` and `project` — and their arguments parsed into an
//! operation (`rules::Op`) or a read (`Read`). Schemas are derived from the argument structs.

use baton_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::rules::{Op, ReportDetails};
use super::state::{ActBounded, Disposition, Profile, ReportOutcome};

/// The routing tools of each participant, by name.
pub const COORDINATOR_TOOLS: [&str; 3] = ["delegate", "unit", "act_bounded"];

/// The environment tools the Coordinator is offered directly: `read`, for instructional material
/// (role and skill files) at any time, and anything inside an `act_bounded` scope. Its other
/// environment tools run through `act_bounded run`, so their schemas are not resent with every
/// Coordinator request.
pub const COORDINATOR_DIRECT: [&str; 1] = ["read"];
pub const EXECUTOR_TOOLS: [&str; 2] = ["return", "project"];

/// Whose routing tool `name` is, if it is one.
pub fn owner(name: &str) -> Option<Profile> {
    if COORDINATOR_TOOLS.contains(&name) {
        Some(Profile::Coordinator)
    } else if EXECUTOR_TOOLS.contains(&name) {
        Some(Profile::Executor)
    } else {
        None
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DelegateArgs {
    /// `assign` saves a new assignment for the Executor and hands control to it; `replace`
    /// supersedes the outstanding assignment (only while no execution of it runs and its unit's
    /// outcome still holds); `cancel` withdraws it (only while no execution of it runs), with a
    /// reason.
    operation: DelegateOperation,
    /// assign / replace: the contract — the question or result and why it matters, the
    /// established facts and the approach, constraints and freedoms, the evidence needed for
    /// assessment, and when to return.
    #[serde(default)]
    contract: Option<String>,
    /// assign, when no unit is open: the outcome the new unit is for, in your words — what must
    /// be true for you to accept it. Leave it out while a unit is open.
    #[serde(default)]
    unit_outcome: Option<String>,
    /// replace / cancel: why the outstanding assignment is replaced or withdrawn, and what stays
    /// covered.
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum DelegateOperation {
    Assign,
    Replace,
    Cancel,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UnitArgs {
    /// `inspect` reads the routing record; `assess` restores the latest report and its evidence
    /// for assessment; `close` ends the open unit with a disposition (refused while an assignment
    /// is outstanding).
    operation: UnitOperation,
    /// inspect: `current` (the open unit), `history` (every unit) or `detail` (of `ref`).
    #[serde(default)]
    view: Option<String>,
    /// inspect detail: a unit id (u1) or an assignment id (a1).
    #[serde(default, rename = "ref")]
    reference: Option<String>,
    /// inspect history: where to continue (from a previous answer).
    #[serde(default)]
    cursor: Option<usize>,
    /// inspect history: how many units, 1 to 100 (default 20).
    #[serde(default)]
    limit: Option<usize>,
    /// close: accepted, cancelled or deferred.
    #[serde(default)]
    outcome: Option<Disposition>,
    /// close: the assessment the disposition rests on.
    #[serde(default)]
    assessment: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum UnitOperation {
    Inspect,
    Assess,
    Close,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ActBoundedArgs {
    /// `open` a scope (the six fields from `scope` to `delegation_loss`); `run` one environment
    /// tool of your role (read, write, edit, bash, grep, find, ls) inside the open scope; `close`
    /// it when its stop condition is reached (`result`).
    operation: ActOperation,
    /// open: what exactly you will read, run or change yourself.
    #[serde(default)]
    scope: Option<String>,
    /// open: the result you expect.
    #[serde(default)]
    expected_result: Option<String>,
    /// open: the authority you already have for it (the user's request, an accepted decision).
    #[serde(default)]
    authority: Option<String>,
    /// open: when you stop.
    #[serde(default)]
    stop_condition: Option<String>,
    /// open: why judgment and action cannot be separated here.
    #[serde(default)]
    inseparable: Option<String>,
    /// open: what delegating it would lose.
    #[serde(default)]
    delegation_loss: Option<String>,
    /// run: the environment tool.
    #[serde(default)]
    tool: Option<String>,
    /// run: that tool's arguments, as the tool takes them.
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
    /// close: what came of the scope.
    #[serde(default)]
    result: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ActOperation {
    Open,
    Run,
    Close,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReturnArgs {
    /// `submit` saves a report (a new revision) and hands it to the Coordinator; `retry` resends
    /// the unchanged saved report after a blocked transfer (no other field).
    operation: ReturnOperation,
    /// submit: the result, the evidence and its limits, corrected assumptions, partial effects,
    /// and why you return.
    #[serde(default)]
    report: Option<String>,
    /// submit: completed, partial or blocked.
    #[serde(default)]
    outcome: Option<ReportOutcome>,
    /// submit: what the report does not establish (at most 32).
    #[serde(default)]
    limitations: Option<Vec<String>>,
    /// submit: assumptions of the contract your work showed to be wrong, each with the
    /// correction.
    #[serde(default)]
    corrected_assumptions: Option<Vec<String>>,
    /// submit: what your work changed that stays changed (files written, commands with effects),
    /// above all when you stop before the contract is done.
    #[serde(default)]
    partial_effects: Option<Vec<String>>,
    /// submit: why you return now; required for a partial or blocked outcome.
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ReturnOperation {
    Submit,
    Retry,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProjectArgs {
    /// `inspect` lists references (metadata, never bodies); `add` selects evidence for the
    /// Coordinator; `remove` withdraws selected evidence, with a reason.
    operation: ProjectOperation,
    /// inspect: selected, assignment, active (not selected) or history.
    #[serde(default)]
    scope: Option<String>,
    /// inspect: where to continue (the `cursor` a previous answer gave).
    #[serde(default)]
    cursor: Option<usize>,
    /// inspect: how many references, 1 to 200 (default 50).
    #[serde(default)]
    limit: Option<usize>,
    /// add / remove: `ctx:` references (at most 64 per call), as shown under tool results.
    #[serde(default)]
    refs: Option<Vec<String>>,
    /// remove: why.
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ProjectOperation {
    Inspect,
    Add,
    Remove,
}

/// A routing tool call: an operation that records events, or a read.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Op(Op),
    InspectUnits {
        view: String,
        reference: Option<String>,
        cursor: usize,
        limit: usize,
    },
    InspectProjection {
        scope: String,
        cursor: usize,
        limit: usize,
    },
    /// `act_bounded run`: the Coordinator's environment call inside its scope.
    ActRun {
        tool: String,
        arguments: Value,
    },
}

fn spec<T: JsonSchema>(name: &str, description: &str) -> ToolSpec {
    let schema = schemars::schema_for!(T);
    let mut parameters = serde_json::to_value(schema).unwrap_or(Value::Null);
    if let Value::Object(o) = &mut parameters {
        o.remove("$schema");
        o.remove("title");
    }
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    }
}

/// The routing tools offered to `profile`.
pub fn specs(profile: Profile) -> Vec<ToolSpec> {
    match profile {
        Profile::Coordinator => vec![
            spec::<DelegateArgs>(
                "delegate",
                "Hand work to the Executor: `assign` a contract (with `unit_outcome` when it starts a new unit; the host runs the Executor and answers with its report and the evidence it selected), `replace` the outstanding assignment with a corrected contract and a reason, or `cancel` it with a reason when its work is no longer wanted.",
            ),
            spec::<UnitArgs>(
                "unit",
                "The unit of work under your judgment: `inspect` the routing record, `assess` the latest report again, or `close` the unit as accepted, cancelled or deferred with your assessment.",
            ),
            spec::<ActBoundedArgs>(
                "act_bounded",
                "Act yourself, only when judgment and action cannot be separated and delegating would lose something concrete: `open` a scope (what, expected result, authority, stop condition, why inseparable, what delegation would lose), then `run` your role's environment tools in it one call at a time, and `close` it at its stop condition. New user input or your next delegation also ends it.",
            ),
        ],
        Profile::Executor => vec![
            spec::<ReturnArgs>(
                "return",
                "End your work on the assignment: `submit` your report (the result; outcome completed, partial or blocked; limitations, corrected assumptions, partial effects, and the reason you return), or `retry` the unchanged saved report after a blocked transfer.",
            ),
            spec::<ProjectArgs>(
                "project",
                "Choose the evidence the Coordinator sees with your report: `inspect` references, `add` the tool results and messages it needs (`ctx:` references), `remove` one with a reason.",
            ),
        ],
    }
}

/// A routing tool's arguments as a call, or a message naming the bad field.
pub fn parse(name: &str, args: &Value) -> Result<Call, String> {
    fn de<T: serde::de::DeserializeOwned>(name: &str, args: &Value) -> Result<T, String> {
        serde_path_to_error::deserialize::<_, T>(args.clone()).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                format!("`{name}`: {}", e.inner())
            } else {
                format!("`{name}`: bad argument `{path}`: {}", e.inner())
            }
        })
    }
    let need = |field: &str, v: Option<String>| {
        v.ok_or_else(|| format!("`{name}`: `{field}` is required for this operation"))
    };
    Ok(match name {
        "delegate" => {
            let a: DelegateArgs = de(name, args)?;
            match a.operation {
                DelegateOperation::Assign => Call::Op(Op::Assign {
                    contract: need("contract", a.contract)?,
                    unit_outcome: a.unit_outcome,
                }),
                DelegateOperation::Replace => Call::Op(Op::Replace {
                    contract: need("contract", a.contract)?,
                    reason: need("reason", a.reason)?,
                }),
                DelegateOperation::Cancel => {
                    if a.contract.is_some() || a.unit_outcome.is_some() {
                        return Err("`delegate`: `cancel` takes only `reason`: it withdraws the outstanding assignment (assign new work afterwards)".into());
                    }
                    Call::Op(Op::Cancel {
                        reason: need("reason", a.reason)?,
                    })
                }
            }
        }
        "unit" => {
            let a: UnitArgs = de(name, args)?;
            match a.operation {
                UnitOperation::Inspect => {
                    let limit = a.limit.unwrap_or(20);
                    if !(1..=100).contains(&limit) {
                        return Err(format!(
                            "`unit`: bad argument `limit`: {limit}: give 1 to 100"
                        ));
                    }
                    Call::InspectUnits {
                        view: a.view.unwrap_or_else(|| "current".into()),
                        reference: a.reference,
                        cursor: a.cursor.unwrap_or(0),
                        limit,
                    }
                }
                UnitOperation::Assess => Call::Op(Op::Assess),
                UnitOperation::Close => Call::Op(Op::Close {
                    disposition: a.outcome.ok_or_else(|| {
                        "`unit`: `outcome` is required to close: accepted, cancelled or deferred"
                            .to_string()
                    })?,
                    assessment: need("assessment", a.assessment)?,
                }),
            }
        }
        "act_bounded" => {
            let a: ActBoundedArgs = de(name, args)?;
            match a.operation {
                ActOperation::Open => Call::Op(Op::OpenActBounded(ActBounded {
                    scope: need("scope", a.scope)?,
                    expected_result: need("expected_result", a.expected_result)?,
                    authority: need("authority", a.authority)?,
                    stop_condition: need("stop_condition", a.stop_condition)?,
                    inseparable: need("inseparable", a.inseparable)?,
                    delegation_loss: need("delegation_loss", a.delegation_loss)?,
                })),
                ActOperation::Close => Call::Op(Op::CloseActBounded {
                    result: need("result", a.result)?,
                }),
                ActOperation::Run => {
                    let tool = need("tool", a.tool)?;
                    if owner(&tool).is_some() {
                        return Err(format!(
                            "`act_bounded`: `tool` is `{tool}`, a routing tool: call it directly"
                        ));
                    }
                    Call::ActRun {
                        tool,
                        arguments: Value::Object(a.arguments.unwrap_or_default()),
                    }
                }
            }
        }
        "return" => {
            let a: ReturnArgs = de(name, args)?;
            match a.operation {
                ReturnOperation::Submit => Call::Op(Op::Submit {
                    report: need("report", a.report)?,
                    outcome: a.outcome.ok_or_else(|| {
                        "`return`: `outcome` is required to submit: completed, partial or blocked"
                            .to_string()
                    })?,
                    limitations: a.limitations.unwrap_or_default(),
                    details: ReportDetails {
                        corrected_assumptions: a.corrected_assumptions.unwrap_or_default(),
                        partial_effects: a.partial_effects.unwrap_or_default(),
                        reason: a.reason,
                    },
                }),
                ReturnOperation::Retry => {
                    if a.report.is_some()
                        || a.outcome.is_some()
                        || a.limitations.is_some()
                        || a.corrected_assumptions.is_some()
                        || a.partial_effects.is_some()
                        || a.reason.is_some()
                    {
                        return Err("`return`: `retry` takes no payload: it resends the saved report unchanged (use `submit` for a new revision)".into());
                    }
                    Call::Op(Op::Retry)
                }
            }
        }
        "project" => {
            let a: ProjectArgs = de(name, args)?;
            match a.operation {
                ProjectOperation::Inspect => {
                    let limit = a.limit.unwrap_or(50);
                    if !(1..=200).contains(&limit) {
                        return Err(format!(
                            "`project`: bad argument `limit`: {limit}: give 1 to 200"
                        ));
                    }
                    Call::InspectProjection {
                        scope: a.scope.unwrap_or_else(|| "selected".into()),
                        cursor: a.cursor.unwrap_or(0),
                        limit,
                    }
                }
                ProjectOperation::Add => Call::Op(Op::ProjectAdd {
                    refs: a.refs.unwrap_or_default(),
                }),
                ProjectOperation::Remove => Call::Op(Op::ProjectRemove {
                    refs: a.refs.unwrap_or_default(),
                    reason: need("reason", a.reason)?,
                }),
            }
        }
        other => return Err(format!("`{other}` is not a routing tool")),
    })
}
