//! The resources of `baton mcp`: a workflow's record (`baton://workflows/{id}`), a Flow's state
//! (`baton://flows/{id}`) and a background task's log (`baton://tasks/{id}/log`), listed, read
//! and subscribed to. Each is read by the function its command uses (`baton status`,
//! `baton flow status --json`, `baton task logs`), passes through the redactor of known provider
//! keys, and a task log is bounded by the executor's output cap.
//!
//! Subscriptions are driven by the project event feed (`baton-events`, inotify): while a session
//! has some, a follower of the feed names each log that gained an event, whoever appended it (this
//! server's tools or a `baton` command in another terminal); the session's task reads the
//! subscribed resources of those logs again and sends `notifications/resources/updated` for each
//! whose answer changed. What no log line records (a process that died, seen by a lock) is
//! caught by reading every subscribed resource again each [`LIVENESS`]. The task ends with the
//! last unsubscribe, when the session ends or when the client's transport is closed. See
//! docs/mcp.md.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use baton_app::documents::WorkflowResource;
use baton_app::project::{output_cap, project_context, state_dir, ProjectContext};
use baton_events::{Cursor, Feed, Filter, Source};
use baton_protocol::SourceKind;
use baton_workflow::run::{outcome, Outcome};
use rmcp::model::{
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::Peer;
use rmcp::{ErrorData, RoleServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// How often the subscribed resources of a session are read again when no event came: what no
/// log line records (a run that died) shows within it.
pub const LIVENESS: Duration = Duration::from_secs(5);

/// The URI forms, as error messages name them.
pub const FORMS: &str = "baton://project, baton://dashboard, baton://workflows/{id}, baton://flows/{id}, baton://tasks/{id}/log and baton://workers/{name}/log";

const JSON: &str = "application/json";
const TEXT: &str = "text/plain";

/// What a URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Where every workflow, Flow, task, worker and session stands (the projection).
    Project,
    /// Where the project's `baton serve` listens.
    Dashboard,
    Workflow(String),
    Flow(String),
    TaskLog(String),
    WorkerLog(String),
}

/// An id as the stores write them: letters, digits, `-`, `_` and `.` (not `.` or `..` alone).
fn plausible_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The target of `uri`, or the invalid-params error naming it and the accepted forms.
fn target(uri: &str) -> Result<Target, ErrorData> {
    let parts: Vec<&str> = uri
        .strip_prefix("baton://")
        .map(|rest| rest.split('/').collect())
        .unwrap_or_default();
    match parts.as_slice() {
        ["project"] => Ok(Target::Project),
        ["dashboard"] => Ok(Target::Dashboard),
        ["workflows", id] if plausible_id(id) => Ok(Target::Workflow(id.to_string())),
        ["flows", id] if plausible_id(id) => Ok(Target::Flow(id.to_string())),
        ["tasks", id, "log"] if plausible_id(id) => Ok(Target::TaskLog(id.to_string())),
        ["workers", name, "log"] if plausible_id(name) => Ok(Target::WorkerLog(name.to_string())),
        _ => Err(ErrorData::invalid_params(
            format!(
                "`{}` is not a baton resource: the resources are {FORMS} (resources/list lists them)",
                baton_text::sanitize_line(uri)
            ),
            Some(json!({"uri": uri})),
        )),
    }
}

impl Target {
    /// The log whose events change what the target answers; `None`: every log's do.
    fn source(&self) -> Option<Source> {
        Some(match self {
            Target::Project | Target::Dashboard => return None,
            Target::Workflow(id) => Source::new(SourceKind::Workflow, id),
            Target::Flow(id) => Source::new(SourceKind::Flow, id),
            Target::TaskLog(id) => Source::new(SourceKind::Task, id),
            Target::WorkerLog(name) => Source::new(SourceKind::Worker, name),
        })
    }
}

fn not_found(uri: &str, why: &str) -> ErrorData {
    ErrorData::resource_not_found(
        baton_text::redact::redact(&format!(
            "resource `{}` not found: {why} (the resources are {FORMS}; resources/list lists them)",
            baton_text::sanitize_line(uri)
        ))
        .into_owned(),
        Some(json!({"uri": uri})),
    )
}

/// A workflow: `{"workflow": the summary `workflow_status` answers with, "brief": …}`. The brief
/// is the one `baton run` ends with once the workflow has ended (completed, stopped, failed), the
/// checkpoint's brief while it waits at one, and the brief of its tasks so far while it runs or
/// was interrupted.
fn workflow_doc(ctx: &ProjectContext, id: &str) -> Result<Value, String> {
    let (id, summary, record) = baton_app::workflow::record(ctx, id)?;
    let brief = match outcome(&id, &record) {
        Some(
            Outcome::Completed { brief, .. }
            | Outcome::Failed { brief, .. }
            | Outcome::Stopped { brief, .. },
        ) => brief,
        Some(Outcome::Checkpoint { checkpoint, .. }) => checkpoint.brief,
        Some(Outcome::Interrupted { .. }) | None => baton_workflow::run::gate::brief_of(
            &record,
            &format!("workflow {id} has not ended (see `workflow.state`)"),
        ),
    };
    Ok(baton_app::documents::to_value(&WorkflowResource {
        workflow: summary,
        brief,
    }))
}

/// The text and MIME type of what `target` names, before redaction; the error says why there is
/// none.
fn content(ctx: &ProjectContext, target: &Target) -> Result<(String, &'static str), String> {
    match target {
        Target::Project => {
            // The documents the dashboard reads, tasks' unpriced children priced as it prices them.
            let prices = &ctx.config.config.prices;
            let docs = baton_events::projection::now(state_dir(ctx), |e| {
                if let baton_events::Payload::Task(baton_exec::background::TaskEvent::Completed {
                    report,
                }) = &mut e.event
                {
                    report.price_unpriced(prices);
                }
            })?;
            Ok((
                pretty(&serde_json::to_value(&docs).unwrap_or_default()),
                JSON,
            ))
        }
        Target::Dashboard => {
            let doc = match baton_app::dashboard::find(&state_dir(ctx))? {
                Some(url) => json!({"running": true, "url": url}),
                None => json!({
                    "running": false,
                    "start": "run `baton serve --open` in the project: it listens on 127.0.0.1:4680 and opens the page"
                }),
            };
            Ok((pretty(&doc), JSON))
        }
        Target::Workflow(id) => {
            let doc = workflow_doc(ctx, id)?;
            Ok((pretty(&doc), JSON))
        }
        Target::Flow(id) => {
            let flows = baton_flow::status(&ctx.cwd, Some(id), &[]).map_err(|e| e.to_string())?;
            let line = baton_app::documents::FlowDocument::status_lines(&flows)
                .into_iter()
                .next()
                .ok_or_else(|| format!("no Flow `{id}`"))?;
            Ok((pretty(&baton_app::documents::to_value(&line)), JSON))
        }
        Target::TaskLog(id) => {
            let events =
                baton_exec::background::events(&state_dir(ctx), id).map_err(|e| e.to_string())?;
            let mut text = baton_app::task_log::lines(&events).join("\n");
            text.push('\n');
            let cap = output_cap(ctx);
            let text = baton_text::truncate(&text, cap, baton_text::Keep::Tail).into_owned();
            Ok((text, TEXT))
        }
        Target::WorkerLog(name) => {
            let mut text = baton_app::workers::log_lines(&state_dir(ctx), name)
                .map_err(|e| format!("{e:#}"))?
                .join("\n");
            text.push('\n');
            let text =
                baton_text::truncate(&text, output_cap(ctx), baton_text::Keep::Tail).into_owned();
            Ok((text, TEXT))
        }
    }
}

fn pretty(doc: &Value) -> String {
    serde_json::to_string_pretty(doc).unwrap_or_else(|_| doc.to_string())
}

fn context(cwd: &Path) -> Result<ProjectContext, ErrorData> {
    project_context(Some(cwd.to_path_buf()))
        .map_err(|e| ErrorData::internal_error(format!("baton mcp: {e:#}"), None))
}

/// `resources/read`: the resource's one text content, known provider keys redacted.
pub fn read(cwd: &Path, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let target = target(uri)?;
    let ctx = context(cwd)?;
    let (text, mime) = content(&ctx, &target).map_err(|why| not_found(uri, &why))?;
    let text = baton_text::redact::redact(&text).into_owned();
    Ok(ReadResourceResult::new(vec![ResourceContents::text(
        text, uri,
    )
    .with_mime_type(mime)]))
}

/// One line of at most `width` characters (an ellipsis marks a cut).
fn short(text: &str, width: usize) -> String {
    let line = baton_text::sanitize_line(text.lines().next().unwrap_or("").trim()).into_owned();
    if line.chars().count() > width || text.trim().lines().count() > 1 {
        let mut cut: String = line.chars().take(width).collect();
        cut.push('…');
        return cut;
    }
    line
}

fn resource(uri: String, name: &str, title: String, description: String, mime: &str) -> Resource {
    let redact = |t: &str| baton_text::redact::redact(t).into_owned();
    Resource::new(uri, name)
        .with_title(redact(&title))
        .with_description(redact(&description))
        .with_mime_type(mime)
}

/// `resources/list`: every workflow of the project (newest first), every Flow of its repository
/// (oldest first; none outside a git repository) and every background task's log (oldest first).
pub fn list(cwd: &Path) -> Result<Vec<Resource>, ErrorData> {
    let ctx = context(cwd)?;
    let mut out = vec![resource(
        "baton://project".into(),
        "project",
        "Where the project's work stands".into(),
        "Every workflow, Flow, background task, worker and session of the project, each as one \
         document (state, phase, what it waits for, units × steps, spent): the projection the \
         terminal UI's panel and the dashboard read"
            .into(),
        JSON,
    )];
    out.push(resource(
        "baton://dashboard".into(),
        "dashboard",
        "The project's web dashboard".into(),
        "Where the project's `baton serve` listens, as an address to open (with the user's token), \
         or how to start it"
            .into(),
        JSON,
    ));
    let status = baton_app::workflow::status_json(&ctx, None)
        .map(|doc| baton_app::documents::to_value(&doc))
        .unwrap_or_default();
    for w in status["workflows"].as_array().into_iter().flatten() {
        let Some(id) = w["id"].as_str() else { continue };
        let kind = w["type"].as_str().unwrap_or("?");
        let description = match w["error"].as_str() {
            Some(e) => format!("unreadable: {}", short(e, 200)),
            None => format!(
                "{}; request: {}",
                w["state"].as_str().unwrap_or("?"),
                short(w["request"].as_str().unwrap_or(""), 100)
            ),
        };
        out.push(resource(
            format!("baton://workflows/{id}"),
            id,
            format!("{kind} workflow {id}"),
            description,
            JSON,
        ));
    }
    for f in baton_flow::status(&ctx.cwd, None, &[]).unwrap_or_default() {
        let id = &f.state.id;
        let phase = serde_json::to_value(f.phase).unwrap_or_default();
        let units: Vec<&str> = f.state.units.iter().map(|u| u.id()).collect();
        out.push(resource(
            format!("baton://flows/{id}"),
            id,
            format!("Flow {id}"),
            format!(
                "{}; {} unit(s): {}",
                phase.as_str().unwrap_or("?"),
                units.len(),
                short(&units.join(", "), 100)
            ),
            JSON,
        ));
    }
    let state = state_dir(&ctx);
    for id in baton_exec::background::list(&state) {
        let description = match baton_exec::background::load(&state, &id) {
            Ok(t) => format!(
                "{}; {}",
                t.phase().as_str(),
                short(
                    &t.entries
                        .iter()
                        .map(|(name, role, _)| format!("{name} as {role}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    100
                )
            ),
            Err(e) => format!("unreadable: {}", short(&e.to_string(), 200)),
        };
        out.push(resource(
            format!("baton://tasks/{id}/log"),
            &id,
            format!("background task {id}: log"),
            description,
            TEXT,
        ));
    }
    for name in baton_exec::worker::list(&state) {
        let description = match baton_app::workers::load(&state, &name) {
            Ok(w) => {
                let (turns, _, _) = w.totals();
                format!(
                    "{}; role {}; {turns} turns",
                    w.phase().as_str(),
                    w.spec.role
                )
            }
            Err(e) => format!("unreadable: {}", short(&format!("{e:#}"), 200)),
        };
        out.push(resource(
            format!("baton://workers/{name}/log"),
            &name,
            format!("worker {name}: log"),
            description,
            TEXT,
        ));
    }
    Ok(out)
}

/// `resources/templates/list`: the four URI forms.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("baton://workflows/{id}", "workflow")
            .with_title("A baton workflow")
            .with_description(
                "A workflow's summary as `workflow_status` shows it (state, phase, what it waits \
                 for, what it spent, its checkpoint) and its brief: `{\"workflow\", \"brief\"}`. \
                 `id` is a workflow id, a unique prefix of one, or `last`.",
            )
            .with_mime_type(JSON),
        ResourceTemplate::new("baton://flows/{id}", "flow")
            .with_title("A baton Flow")
            .with_description(
                "A Flow's state as `baton flow status --json` prints it: `{\"type\": \
                 \"flow.status\", \"flow\": …}` with its phase and each unit's status, attempts \
                 and verdicts.",
            )
            .with_mime_type(JSON),
        ResourceTemplate::new("baton://tasks/{id}/log", "task-log")
            .with_title("A background task's log")
            .with_description(
                "The log of a background task started by `delegate_task` with `background: \
                 true`: the lines `baton task logs ID` prints (created, supervisor running, each \
                 entry's steps and end, completed), the newest kept when it is longer than the \
                 output cap.",
            )
            .with_mime_type(TEXT),
        ResourceTemplate::new("baton://workers/{name}/log", "worker-log")
            .with_title("A managed worker's log")
            .with_description(
                "The log of a managed worker (`worker_start`): created, started (its session), \
                 each prompt queued, delivered and answered with its usage, lost prompts, \
                 stopped and retired; the lines `baton worker logs NAME` prints.",
            )
            .with_mime_type(TEXT),
    ]
}

/// What a read of `uri` answers now, as a number that changes when the answer does (an error
/// included: a resource that goes away, or comes back, is a change).
fn fingerprint(cwd: &Path, uri: &str) -> u64 {
    fingerprint_of(&read(cwd, uri))
}

fn fingerprint_of(read: &Result<ReadResourceResult, ErrorData>) -> u64 {
    let mut h = DefaultHasher::new();
    match read {
        Ok(r) => format!("{:?}", r.contents).hash(&mut h),
        Err(e) => format!("error {}", e.message).hash(&mut h),
    }
    h.finish()
}

/// One session's subscriptions: each URI with the fingerprint of its last read, and the token
/// that stops the session's watcher while it runs.
#[derive(Default)]
struct Watched {
    uris: BTreeMap<String, u64>,
    stop: Option<CancellationToken>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
    }
}

/// The subscriptions of one MCP session (each session's server has its own).
#[derive(Clone, Default)]
pub struct Subscriptions {
    inner: Arc<Mutex<Watched>>,
}

impl Subscriptions {
    /// `resources/subscribe`: the URI must name a resource that can be read now; the session's
    /// watcher starts with its first subscription.
    pub fn subscribe(
        &self,
        cwd: &Path,
        uri: &str,
        peer: Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let now = read(cwd, uri);
        let print = fingerprint_of(&now);
        now?;
        let mut w = self.lock()?;
        w.uris.insert(uri.to_string(), print);
        if w.stop.is_none() {
            let stop = CancellationToken::new();
            w.stop = Some(stop.clone());
            tokio::spawn(watch(
                Arc::downgrade(&self.inner),
                cwd.to_path_buf(),
                peer,
                stop,
            ));
        }
        Ok(())
    }

    /// `resources/unsubscribe`: no more updates for `uri` (a URI not subscribed to is accepted);
    /// the watcher stops with the last one.
    pub fn unsubscribe(&self, uri: &str) -> Result<(), ErrorData> {
        let mut w = self.lock()?;
        w.uris.remove(uri);
        if w.uris.is_empty() {
            if let Some(stop) = w.stop.take() {
                stop.cancel();
            }
        }
        Ok(())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Watched>, ErrorData> {
        self.inner.lock().map_err(|_| {
            ErrorData::internal_error(
                "baton mcp: the subscriptions are unusable after a panic",
                None,
            )
        })
    }
}

/// The watcher of one session: reads again the subscribed resources whose logs gained events
/// (and all of them each [`LIVENESS`]) off the async threads, and notifies the ones whose answer
/// changed. Ends when stopped, when the session's subscriptions are dropped with its server, or
/// when the client is gone.
async fn watch(
    watched: Weak<Mutex<Watched>>,
    cwd: PathBuf,
    peer: Peer<RoleServer>,
    stop: CancellationToken,
) {
    let mut appended = Some(follow(&cwd));
    loop {
        // `None`: read every subscribed resource; else those of the logs named.
        let touched: Option<Vec<Source>> = tokio::select! {
            _ = stop.cancelled() => return,
            next = async {
                match appended.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            } => match next {
                Some(first) => {
                    let mut sources = vec![first];
                    while let Some(Ok(s)) = appended.as_mut().map(|rx| rx.try_recv()) {
                        sources.push(s);
                    }
                    // `None` among them: everything is read again.
                    sources.into_iter().collect::<Option<Vec<Source>>>()
                }
                None => {
                    // The follower stopped (no inotify): the liveness reads go on.
                    appended = None;
                    continue;
                }
            },
            _ = tokio::time::sleep(LIVENESS) => None,
        };
        if peer.is_transport_closed() {
            return;
        }
        let uris: Vec<String> = match watched.upgrade() {
            Some(w) => match w.lock() {
                Ok(w) => w
                    .uris
                    .keys()
                    .filter(|uri| match (&touched, target(uri)) {
                        (None, _) => true,
                        (Some(sources), Ok(t)) => t.source().is_none_or(|s| sources.contains(&s)),
                        (Some(_), Err(_)) => false,
                    })
                    .cloned()
                    .collect(),
                Err(_) => return,
            },
            None => return,
        };
        if uris.is_empty() {
            continue;
        }
        let dir = cwd.clone();
        let Ok(now) = tokio::task::spawn_blocking(move || {
            uris.into_iter()
                .map(|uri| {
                    let print = fingerprint(&dir, &uri);
                    (uri, print)
                })
                .collect::<Vec<_>>()
        })
        .await
        else {
            return;
        };
        let changed: Vec<String> = match watched.upgrade() {
            Some(w) => match w.lock() {
                Ok(mut w) => now
                    .into_iter()
                    .filter(|(uri, print)| match w.uris.get_mut(uri) {
                        Some(last) if *last != *print => {
                            *last = *print;
                            true
                        }
                        _ => false,
                    })
                    .map(|(uri, _)| uri)
                    .collect(),
                Err(_) => return,
            },
            None => return,
        };
        for uri in changed {
            if stop.is_cancelled() {
                return;
            }
            let param = ResourceUpdatedNotificationParam::new(uri);
            if peer.notify_resource_updated(param).await.is_err() {
                return;
            }
        }
    }
}

/// A follower of the project's workflow, Flow and task logs on a thread of its own (its first
/// read of every log stays off the async threads): `None` once that first read is done (what
/// changed before it is found by reading every subscribed resource again), then the log of each
/// event appended after it, as `baton events --follow` sees it. The channel closes when the
/// project or inotify cannot be used (the liveness reads remain). The thread ends at the first
/// event after the receiver is dropped.
fn follow(cwd: &Path) -> tokio::sync::mpsc::UnboundedReceiver<Option<Source>> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let cwd = cwd.to_path_buf();
    let _ = std::thread::Builder::new()
        .name("baton-mcp-feed".into())
        .spawn(move || {
            let Ok(ctx) = project_context(Some(cwd.clone())) else {
                return;
            };
            let state = state_dir(&ctx);
            let root = state.project_root().unwrap_or(&cwd).to_path_buf();
            let filter = Filter {
                kinds: vec![
                    SourceKind::Workflow,
                    SourceKind::Flow,
                    SourceKind::Task,
                    SourceKind::Worker,
                ],
                ids: Vec::new(),
            };
            // Only the logs events come from are sent on: the projected parse, which skips the
            // bulk of a workflow's changes, reads enough.
            let mut feed = Feed::new(state, filter, Cursor::default()).projected();
            // What is there now is not news: the follower starts after it.
            let _ = feed.poll();
            if tx.send(None).is_err() {
                return;
            }
            let mut emit = |e: &baton_events::Event| {
                tx.send(Some(e.source.clone()))
                    .map_err(|_| std::io::Error::other("unsubscribed"))
            };
            let _ = baton_events::follow::stream(&mut feed, &root, true, &mut emit, &mut |_| {});
        });
    rx
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn uris_parse_to_their_targets_and_others_are_refused() {
        assert_eq!(
            target("baton://workflows/wf-1").unwrap(),
            Target::Workflow("wf-1".into())
        );
        assert_eq!(
            target("baton://flows/f1").unwrap(),
            Target::Flow("f1".into())
        );
        assert_eq!(
            target("baton://tasks/t01/log").unwrap(),
            Target::TaskLog("t01".into())
        );
        for bad in [
            "baton://tasks/t01",
            "baton://workflows/",
            "baton://workflows/../x",
            "baton://workflows/a/b",
            "file:///etc/passwd",
            "baton://flows/..",
            "baton://nope/x",
        ] {
            let e = target(bad).unwrap_err();
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
            assert!(e.message.contains(bad), "{}", e.message);
            assert!(
                e.message.contains("baton://tasks/{id}/log"),
                "{}",
                e.message
            );
        }
    }
}
