// The projection's documents (`baton_events::projection::Doc`) as `baton serve` sends them,
// derived from the Rust types by baton-events' test
// `the_typescript_declarations_are_the_committed_ones`: do not edit, write it again with
// BATON_WRITE_TYPES=1.

/**
 * What one workflow, Flow, background task, managed worker or session stands at: the document
 * the dashboard and MCP read ([`Projection::doc`]). The fields a kind does not have stay empty;
 * a workflow carries its [`Workflow`], a Flow its [`Flow`].
 */
export type Doc = { kind: Kind, id: string, state: State,
/**
 * A short line on where it is: a workflow's phase or question, a Flow's unit step, a
 * worker's activity.
 */
detail: string,
/**
 * A task's children's roles, a worker's or a session's role.
 */
role: string,
/**
 * A worker's or a session's model.
 */
model: string | null,
/**
 * A worker's answered prompts.
 */
turns: number, tokens: number, cost_usd: number | null,
/**
 * The session to read: a task's last child's, a worker's own.
 */
session: string | null,
/**
 * What a task was asked (each child's name and task); a session's first prompt.
 */
what: string | null,
/**
 * Why a task failed: the first failed child and its error.
 */
reason: string | null,
/**
 * A worker's last answer, its first line.
 */
answer: string | null,
/**
 * A routed session (two seats).
 */
routed: boolean, workflow: Workflow | null, flow: Flow | null, };

/**
 * A workflow's view: its dispatches in order, and its checkpoint.
 */
export type Workflow = {
/**
 * The workflow's type (`BUILD`, `DEBUG` …).
 */
kind: string,
/**
 * What the user asked for, in their words (the record's `user_request`).
 */
request: string | null,
/**
 * The runner's own state (`running`, `checkpoint`, `completed`, `failed`, `stopped`): a
 * `failed` workflow takes the user's guidance, a `stopped` one is over.
 */
run_state: string | null, phase: string, nodes: Array<Node>, checkpoint: Checkpoint | null,
/**
 * What it waits for while it needs the user: the checkpoint's gate, `budget` or `stopped`.
 */
waits: string | null,
/**
 * Why it ended or stopped.
 */
note: string | null,
/**
 * What it spent so far and its budget, from the record's changes (`spent`, `run.budget_*`).
 */
spent: Spent, };

/**
 * One dispatch of a workflow: a node of its task graph.
 */
export type Node = { task_id: string, agent: string, phase: string, state: Step, verdict: string | null,
/**
 * Why a dispatch that failed did, in words (its answer held no contract that validates).
 */
reason: string | null,
/**
 * The remediation cycle, from the attempt (1 is the first run).
 */
attempt: number, };

/**
 * A checkpoint waiting for an answer.
 */
export type Checkpoint = { gate: string, question: string, options: Array<string>, recommended: string | null, };

/**
 * A workflow's spending and budget.
 */
export type Spent = { cost_usd: number, input_tokens: number, output_tokens: number, budget_usd: number | null, budget_tokens: number | null, };

/**
 * A Flow's view: units × steps.
 */
export type Flow = { units: Array<Unit>, main_branch: string,
/**
 * `completed`, `failed` or `abandoned`, once it is one.
 */
outcome: string | null, };

/**
 * One unit of a Flow: its steps and where its branch is.
 */
export type Unit = { id: string, name: string,
/**
 * implement, rebase, validate, review, merge ([`STEPS`]).
 */
steps: [Step, Step, Step, Step, Step], base: string | null, tip: string | null,
/**
 * Why it stopped, when it did (a blocked step's reason and evidence).
 */
note: string | null,
/**
 * The reviewer's output, when it reviewed.
 */
review: string | null,
/**
 * The implementer's last answer (its output, and its stderr when it failed).
 */
implementer: string | null,
/**
 * Each validation command of the last run.
 */
validation: Array<Check>,
/**
 * The review packet the reviewer was given (a patch file of the Flow's record).
 */
packet: string | null, };

/**
 * One validation command of a unit's last run.
 */
export type Check = {
/**
 * The command as typed.
 */
command: string, ok: boolean,
/**
 * Its output (stdout and stderr interleaved, bounded).
 */
output: string, };

/**
 * What a row is.
 */
export type Kind = "delegation" | "task" | "flow" | "workflow" | "worker" | "session";

/**
 * Where a thing stands; the panel's groups, in the order they are shown.
 */
export type State = "needs" | "running" | "done" | "failed" | "cancelled";

/**
 * How far one step of a Flow unit (or a workflow's dispatch) went.
 */
export type Step = "pending" | "running" | "done" | "failed" | "skipped";
