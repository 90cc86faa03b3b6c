//! The routes of `baton serve`, the embedded page and the server itself.
//!
//! | route | what |
//! | --- | --- |
//! | `GET /` | the page (its CSRF token in a `<meta>`; `?token=` also sets the token cookie) |
//! | `GET /assets/{file}` | the page's modules and style, embedded, hand-written (gzip when asked) |
//! | `GET /api/events[?overview=1]` | the project event feed as server-sent events (`Last-Event-ID` resumes), each batch after a `projection` message with the documents of the logs it touched; with `overview`, what the logs hold at the start is one `overview` message (every log's document and summary) instead of its events |
//! | `GET /api/timeline?skip=S&limit=N[&upto=U][&kind=K][&text=T]` | a page of the Events list, newest first (`history::Page`) |
//! | `GET /api/cost?by=model\|role\|day\|workflow[&upto=U]` | what was spent, summed (`history::Cost`), once the history holds the `U` events the page knows of |
//! | `GET /api/workflows/{id}/events` | one workflow's events (`{events, problems}`), for its view |
//! | `GET /api/tasks/{id}/log` | a task's log, as `baton task logs` prints it (a JSON array of lines) |
//! | `GET /api/sessions/{id}/transcript` | a session's transcript, entry by entry (JSON array) |
//! | `GET /api/projection` | every log's document now (`baton_events::projection::Doc`, JSON array) |
//! | `GET /api/workflows/{id}/artifact[?seq=N]` | a workflow's artifact, after event N or now |
//! | `GET /api/workflows/{id}/dispatches/{task}` | a dispatch's answer and its contract, parsed |
//! | `GET /api/workflows/{id}/dispatches/{task}/change[?attempt=N]` | what a writer's dispatch changed: `git diff` of the snapshots before and after it |
//! | `GET /api/flows/{id}/units/{unit}/packet` | the exact review packet a unit's reviewer got |
//! | `GET /api/flows/{id}/units/{unit}/change` | what a unit changed: `git diff` of its base and tip |
//! | `POST /api/tasks/{id}/cancel` | `baton task cancel ID` |
//! | `POST /api/workflows/{id}/answer` | `baton resume ID --answer BODY` (the body is the exact words) |
//! | `POST /api/flows/{id}/continue`, `…/abandon`, `…/clean` | `baton flow continue --guidance=BODY -- ID`, `abandon -- ID`, `clean --yes -- ID` |
//!
//! Each action runs this `baton`'s own CLI command, detached (`baton_app::actions`): it writes
//! what the CLI writes, and the page follows it through the feed.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use baton_app::actions::Action;
use baton_events::Cursor;
use baton_state::StateDir;

use crate::guard::{self, Guard};
use crate::history::{By, History};

const INDEX: &str = include_str!("assets/index.html");

/// The page's files: name, type, text. Hand-written ES modules and a style sheet; no build step.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", JS, include_str!("assets/app.js")),
    ("model.js", JS, include_str!("assets/model.js")),
    ("vlist.js", JS, include_str!("assets/vlist.js")),
    ("views.js", JS, include_str!("assets/views.js")),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
];
const JS: &str = "text/javascript; charset=utf-8";

/// A file of the page, as it is and gzipped.
struct Asset {
    kind: &'static str,
    plain: Vec<u8>,
    gzip: Vec<u8>,
}

impl Asset {
    fn new(kind: &'static str, text: &str) -> Asset {
        use std::io::Write as _;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing to memory cannot fail.
        let _ = z.write_all(text.as_bytes());
        Asset {
            kind,
            plain: text.as_bytes().to_vec(),
            gzip: z.finish().unwrap_or_default(),
        }
    }

    /// The file, gzipped when the request takes it.
    fn respond(&self, headers: &HeaderMap) -> Response {
        let gzip = !self.gzip.is_empty()
            && headers
                .get(header::ACCEPT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
        let mut out = (
            [
                (header::CONTENT_TYPE, self.kind),
                (header::VARY, "Accept-Encoding"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            if gzip {
                self.gzip.clone()
            } else {
                self.plain.clone()
            },
        )
            .into_response();
        if gzip {
            out.headers_mut().insert(
                header::CONTENT_ENCODING,
                axum::http::HeaderValue::from_static("gzip"),
            );
        }
        out
    }
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub addr: SocketAddr,
    pub token: Option<String>,
    /// The project's root and state folder.
    pub root: PathBuf,
    pub state: StateDir,
    /// This `baton` program: actions run its CLI commands, so they write what the CLI writes.
    pub exe: PathBuf,
    /// The price table (`[prices]` over the built-in one): a task's children are priced with it,
    /// as `baton task` prices them, when they did not say what they cost.
    pub prices: std::collections::BTreeMap<String, baton_protocol::config::Price>,
}

#[derive(Clone)]
struct App {
    opts: Options,
    /// The page (with this server's CSRF token) and its files.
    page: std::sync::Arc<Asset>,
    assets: std::sync::Arc<std::collections::BTreeMap<&'static str, Asset>>,
    /// The history the page pages through, kept up as it is asked for.
    history: std::sync::Arc<std::sync::Mutex<History>>,
}

async fn index(
    State(app): State<App>,
    headers: HeaderMap,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let mut page = app.page.respond(&headers);
    // The token of the first load becomes a cookie, so the page's own requests carry it.
    if let (Some(t), Some(_)) = (q.get("token"), &app.opts.token) {
        if let Ok(v) = axum::http::HeaderValue::from_str(&format!(
            "baton_token={t}; HttpOnly; SameSite=Strict; Path=/"
        )) {
            page.headers_mut().insert(header::SET_COOKIE, v);
        }
    }
    page
}

async fn asset(
    State(app): State<App>,
    headers: HeaderMap,
    UrlPath(name): UrlPath<String>,
) -> Response {
    match app.assets.get(name.as_str()) {
        Some(a) => a.respond(&headers),
        None => (StatusCode::NOT_FOUND, "baton serve: no such file\n").into_response(),
    }
}

async fn events(
    State(app): State<App>,
    headers: HeaderMap,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let given = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| q.get("since").cloned())
        .unwrap_or_default();
    let since: Cursor = match given.parse() {
        Ok(c) => c,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!(
                    "baton serve: Last-Event-ID / since `{}`: {e}\n",
                    baton_text::sanitize_line(&given)
                ),
            )
                .into_response()
        }
    };
    // A reconnect (`Last-Event-ID`) resumes event by event, whatever the address asked.
    let overview = (since.positions().next().is_none() && q.contains_key("overview"))
        .then(|| app.history.clone());
    let stream = crate::live::events(
        app.opts.state.clone(),
        app.opts.root.clone(),
        since,
        std::sync::Arc::new(app.opts.prices.clone()),
        overview,
    );
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Starts `action` as the CLI's own command, detached; 202 with what it does, or 400.
fn act(app: &App, action: Action) -> Response {
    match baton_app::actions::start(&app.opts.exe, &app.opts.root, &app.opts.state, &action) {
        Ok(log) => (
            StatusCode::ACCEPTED,
            format!("{} (its output: {})\n", action.describe(), log.display()),
        )
            .into_response(),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            format!("baton serve: {}\n", baton_text::sanitize_line(&e)),
        )
            .into_response(),
    }
}

/// The body of an action: the user's exact words, or what to say when it is empty.
fn words(body: &str, what: &str) -> Result<String, String> {
    if body.trim().is_empty() {
        return Err(format!(
            "baton serve: the {what} is empty: send the words as the request's body\n"
        ));
    }
    Ok(body.to_string())
}

fn bad(text: String) -> Response {
    (StatusCode::BAD_REQUEST, text).into_response()
}

async fn answer(
    State(app): State<App>,
    UrlPath(workflow): UrlPath<String>,
    body: String,
) -> Response {
    match words(&body, "answer") {
        Ok(text) => act(&app, Action::Answer { workflow, text }),
        Err(e) => bad(e),
    }
}

async fn flow_action(
    State(app): State<App>,
    UrlPath((flow, what)): UrlPath<(String, String)>,
    body: String,
) -> Response {
    let action = match what.as_str() {
        "continue" => match words(&body, "guidance") {
            Ok(guidance) => Action::FlowContinue { flow, guidance },
            Err(e) => return bad(e),
        },
        "abandon" => Action::FlowAbandon { flow },
        "clean" => Action::FlowClean { flow },
        _ => {
            return (
                StatusCode::NOT_FOUND,
                "baton serve: a Flow's actions are continue, abandon and clean\n",
            )
                .into_response()
        }
    };
    act(&app, action)
}

/// Lines to read, as a JSON array; 404 with the reason when there is nothing to read.
fn lines(read: Result<Vec<String>, String>) -> Response {
    match read {
        Ok(lines) => (
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_string(&lines).unwrap_or_else(|_| "[]".into()),
        )
            .into_response(),
        Err(e) => (
            StatusCode::NOT_FOUND,
            format!("baton serve: {}\n", baton_text::sanitize_line(&e)),
        )
            .into_response(),
    }
}

async fn task_log(State(app): State<App>, UrlPath(task): UrlPath<String>) -> Response {
    if let Err(e) = baton_state::check_id(baton_state::IdKind::Record, &task) {
        return (StatusCode::BAD_REQUEST, format!("baton serve: {e}\n")).into_response();
    }
    lines(baton_app::task_log::read(&app.opts.state, &task))
}

async fn transcript(State(app): State<App>, UrlPath(id): UrlPath<String>) -> Response {
    match baton_app::task_log::transcript_entries(&app.opts.state, &id) {
        Ok(entries) => json(&entries),
        Err(e) => not_found(&e),
    }
}

fn json(v: &impl serde::Serialize) -> Response {
    match serde_json::to_string(v) {
        Ok(text) => ([(header::CONTENT_TYPE, "application/json")], text).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("baton serve: {e}\n"),
        )
            .into_response(),
    }
}

fn not_found(e: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!("baton serve: {}\n", baton_text::sanitize_line(e)),
    )
        .into_response()
}

async fn artifact(
    State(app): State<App>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let seq = match q.get("seq").map(|s| s.parse::<u64>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => {
            return bad("baton serve: seq: a positive whole number (the event's seq)\n".into())
        }
    };
    match baton_app::task_log::workflow_artifact(&app.opts.state, &id, seq) {
        Ok((artifact, events)) => json(&serde_json::json!({
            "seq": seq.unwrap_or(events),
            "events": events,
            "artifact": artifact,
        })),
        Err(e) => not_found(&e),
    }
}

async fn dispatch(
    State(app): State<App>,
    UrlPath((id, task)): UrlPath<(String, String)>,
) -> Response {
    match baton_app::task_log::dispatch(&app.opts.state, &id, &task) {
        Ok(d) => json(&d),
        Err(e) => not_found(&e),
    }
}

/// Every log's document now: the whole feed folded once (`baton_events::projection`), its
/// tasks' children priced as the stream prices them.
async fn projection(State(app): State<App>) -> Response {
    let prices = std::sync::Arc::new(app.opts.prices.clone());
    let state = app.opts.state.clone();
    let folded = tokio::task::spawn_blocking(move || {
        baton_events::projection::now(state, |e| {
            crate::lean::price_typed(e, &prices);
        })
    })
    .await;
    match folded {
        Ok(Ok(docs)) => json(&docs),
        Ok(Err(errors)) => not_found(&errors),
        Err(e) => not_found(&e.to_string()),
    }
}

/// Runs `read` on the history, caught up first when the page knows of lines it has not read
/// (`upto`) or when it was not read for a second.
async fn with_history(
    app: &App,
    upto: Option<usize>,
    read: impl FnOnce(&mut History) -> Response + Send + 'static,
) -> Response {
    let history = app.history.clone();
    let answered = tokio::task::spawn_blocking(move || {
        let mut h = match history.lock() {
            Ok(h) => h,
            Err(poisoned) => poisoned.into_inner(),
        };
        h.catch_up_for(upto);
        read(&mut h)
    })
    .await;
    answered.unwrap_or_else(|e| not_found(&e.to_string()))
}

/// A page of the Events list: `skip` and `limit` (at most `history::MOST_LINES`), newest first,
/// of the first `upto` lines, those of log kind `kind` and holding `text`.
async fn timeline(
    State(app): State<App>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let number = |k: &str| -> Result<Option<usize>, String> {
        q.get(k)
            .map(|v| v.parse::<usize>())
            .transpose()
            .map_err(|_| format!("baton serve: {k}: a whole number\n"))
    };
    let (skip, limit, upto) = match (number("skip"), number("limit"), number("upto")) {
        (Ok(s), Ok(l), Ok(u)) => (s.unwrap_or(0), l.unwrap_or(100), u),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return bad(e),
    };
    let kind = match q.get("kind").filter(|k| !k.is_empty()) {
        None => None,
        Some(k) => match serde_json::from_value(serde_json::Value::String(k.clone())) {
            Ok(kind) => Some(kind),
            Err(_) => {
                return bad(format!(
                "baton serve: kind `{}`: one of workflow, flow, task, worker, session, routing\n",
                baton_text::sanitize_line(k)
            ))
            }
        },
    };
    let query = crate::history::Query {
        kind,
        text: q
            .get("text")
            .map(|t| t.trim().to_lowercase())
            .unwrap_or_default(),
        skip,
        limit,
        upto,
    };
    with_history(&app, upto, move |h| json(&h.page(&query))).await
}

/// What was spent, summed `by` model, role, day or workflow.
async fn cost(
    State(app): State<App>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let by: By = match q.get("by").map_or("model", String::as_str).parse() {
        Ok(by) => by,
        Err(e) => return bad(format!("baton serve: {e}\n")),
    };
    // The events the page knows of: the history reads on until it holds them.
    let upto = match q.get("upto").map(|u| u.parse::<usize>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => return bad("baton serve: upto: a whole number\n".into()),
    };
    with_history(&app, upto, move |h| json(&h.cost(by))).await
}

/// One workflow's events, for its view.
async fn workflow_events(State(app): State<App>, UrlPath(id): UrlPath<String>) -> Response {
    if let Err(e) = baton_state::check_id(baton_state::IdKind::Record, &id) {
        return bad(format!("baton serve: {e}\n"));
    }
    let state = app.opts.state.clone();
    let read = tokio::task::spawn_blocking(move || {
        let (dir, suffix) =
            baton_events::feed::location(&state, baton_events::SourceKind::Workflow);
        if !dir.join(format!("{id}{suffix}")).is_file() {
            return Err(format!("no workflow {id} in this project"));
        }
        Ok(crate::history::workflow_events(&state, &id))
    })
    .await;
    match read {
        Ok(Ok((events, problems))) => {
            json(&serde_json::json!({ "events": events, "problems": problems }))
        }
        Ok(Err(e)) => not_found(&e),
        Err(e) => not_found(&e.to_string()),
    }
}

async fn packet(
    State(app): State<App>,
    UrlPath((flow, unit)): UrlPath<(String, String)>,
) -> Response {
    match baton_app::task_log::review_packet(&app.opts.state, &flow, &unit) {
        Ok(text) => ([(header::CONTENT_TYPE, "text/x-diff; charset=utf-8")], text).into_response(),
        Err(e) => not_found(&e),
    }
}

async fn unit_change(
    State(app): State<App>,
    UrlPath((flow, unit)): UrlPath<(String, String)>,
) -> Response {
    let state = app.opts.state.clone();
    diff_response(move || baton_app::changes::unit_change(&state, &flow, &unit)).await
}

async fn session_change(State(app): State<App>, UrlPath(id): UrlPath<String>) -> Response {
    let state = app.opts.state.clone();
    diff_response(move || baton_app::changes::session_change(&state, &id)).await
}

async fn dispatch_change(
    State(app): State<App>,
    UrlPath((id, task)): UrlPath<(String, String)>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let attempt = match q.get("attempt").map(|a| a.parse::<usize>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => {
            return bad("baton serve: attempt: a whole number (1 is the first run)\n".into())
        }
    };
    let (state, root) = (app.opts.state.clone(), app.opts.root.clone());
    diff_response(move || baton_app::changes::dispatch_change(&state, &root, &id, &task, attempt))
        .await
}

async fn workflow_change(State(app): State<App>, UrlPath(id): UrlPath<String>) -> Response {
    let (state, root) = (app.opts.state.clone(), app.opts.root.clone());
    diff_response(move || baton_app::changes::workflow_change(&state, &root, &id)).await
}

/// A diff read off the async threads (git runs), as `text/x-diff`, or 404 with why not.
async fn diff_response(read: impl FnOnce() -> Result<String, String> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(text)) => {
            ([(header::CONTENT_TYPE, "text/x-diff; charset=utf-8")], text).into_response()
        }
        Ok(Err(e)) => not_found(&e),
        Err(e) => not_found(&e.to_string()),
    }
}

async fn cancel_task(State(app): State<App>, UrlPath(task): UrlPath<String>) -> Response {
    act(&app, Action::CancelTask { task })
}

/// The router for `guard`.
fn router(opts: Options, guard: Guard) -> Router {
    let history = std::sync::Arc::new(std::sync::Mutex::new(History::new(
        opts.state.clone(),
        std::sync::Arc::new(opts.prices.clone()),
    )));
    // Read once as the server starts, so the first page does not wait for it; at a lower
    // priority, so the page's first paint does not wait for the cores either.
    baton_app::runtime::background({
        let history = history.clone();
        move || {
            if let Ok(mut h) = history.lock() {
                h.catch_up();
            }
        }
    });
    let app = App {
        history,
        opts,
        page: std::sync::Arc::new(Asset::new(
            "text/html; charset=utf-8",
            &INDEX.replace("{{CSRF}}", &guard.csrf),
        )),
        assets: std::sync::Arc::new(
            ASSETS
                .iter()
                .map(|(name, kind, text)| (*name, Asset::new(kind, text)))
                .collect(),
        ),
    };
    Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
        .route("/api/events", get(events))
        .route("/api/tasks/{id}/cancel", post(cancel_task))
        .route("/api/tasks/{id}/log", get(task_log))
        .route("/api/sessions/{id}/transcript", get(transcript))
        .route("/api/sessions/{id}/change", get(session_change))
        .route("/api/workflows/{id}/change", get(workflow_change))
        .route("/api/projection", get(projection))
        .route("/api/timeline", get(timeline))
        .route("/api/cost", get(cost))
        .route("/api/workflows/{id}/events", get(workflow_events))
        .route("/api/workflows/{id}/artifact", get(artifact))
        .route("/api/workflows/{id}/dispatches/{task}", get(dispatch))
        .route(
            "/api/workflows/{id}/dispatches/{task}/change",
            get(dispatch_change),
        )
        .route("/api/flows/{id}/units/{unit}/packet", get(packet))
        .route("/api/flows/{id}/units/{unit}/change", get(unit_change))
        .route("/api/workflows/{id}/answer", post(answer))
        .route("/api/flows/{id}/{action}", post(flow_action))
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
}

/// Serves until the process is stopped; `ready` gets the bound address (its real port) once it
/// accepts connections.
pub async fn serve(opts: Options, ready: impl FnOnce(SocketAddr)) -> Result<()> {
    if let Some(why) = guard::refusal(&opts.addr, opts.token.as_deref()) {
        anyhow::bail!("{why}");
    }
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .with_context(|| format!("cannot listen on {}", opts.addr))?;
    let local = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let guard = Guard {
        token: opts.token.clone().filter(|t| !t.is_empty()),
        local,
        csrf: uuid::Uuid::new_v4().simple().to_string(),
    };
    ready(local);
    axum::serve(listener, router(opts, guard))
        .await
        .context("the dashboard's server failed")
}
