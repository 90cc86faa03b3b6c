//! The HTTP side: a scripted mock model server on 127.0.0.1.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::json::obj;
use crate::render::{self, Ctx, CREATED};
use crate::request::{RecordedRequest, Route, WireFormat};
use crate::rules::ScriptRule;
use crate::script::Script;
use crate::turn::{Fault, Step, Turn};

/// Model name used in answers when the request does not name one.
const FALLBACK_MODEL: &str = "mock-model";

/// Decides whether a rule applies to a request.
pub type Predicate = Arc<dyn Fn(&RecordedRequest) -> bool + Send + Sync + 'static>;

/// Called with every request after it is recorded.
pub type RequestHook = Arc<dyn Fn(&RecordedRequest) + Send + Sync + 'static>;

struct Rule {
    predicate: Predicate,
    step: Step,
    once: bool,
}

struct State_ {
    steps: Vec<Step>,
    next: usize,
    looping: bool,
    rules: Vec<Rule>,
    /// Every request, in order, unless the builder said not to keep them.
    requests: Vec<RecordedRequest>,
    keep_requests: bool,
    /// Requests received so far, kept or not.
    received: usize,
    /// Model requests answered so far; the next one gets `served + 1` as its id sequence.
    served: u64,
}

impl State_ {
    /// Counts a request, keeps it if asked to, and says its number (from 1).
    fn record(&mut self, request: &RecordedRequest) -> usize {
        self.received += 1;
        if self.keep_requests {
            self.requests.push(request.clone());
        }
        self.received
    }

    fn take_step(&mut self, request: &RecordedRequest) -> Option<Step> {
        if let Some(pos) = self.rules.iter().position(|rule| (rule.predicate)(request)) {
            let step = self.rules[pos].step.clone();
            if self.rules[pos].once {
                self.rules.remove(pos);
            }
            return Some(step);
        }
        if self.next >= self.steps.len() && self.looping {
            self.next = 0;
        }
        let step = self.steps.get(self.next).cloned()?;
        self.next += 1;
        Some(step)
    }
}

struct Shared {
    state: Mutex<State_>,
    on_request: Option<RequestHook>,
    /// When set, requests without this key get HTTP 401 (see [`MockServerBuilder::require_key`]).
    key: Option<String>,
    /// The answer to `GET /props` (see [`MockServerBuilder::props`]).
    props: Option<String>,
    /// TCP connections accepted so far.
    connections: std::sync::atomic::AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State_> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Configures a [`MockServer`]. Steps are played in order, one per model request;
/// rules added with [`when`](Self::when) are checked first.
pub struct MockServerBuilder {
    steps: Vec<Step>,
    rules: Vec<Rule>,
    looping: bool,
    port: u16,
    on_request: Option<RequestHook>,
    key: Option<String>,
    props: Option<String>,
    keep_requests: bool,
}

impl MockServerBuilder {
    /// Queues a step.
    pub fn step(mut self, step: impl Into<Step>) -> Self {
        self.steps.push(step.into());
        self
    }

    /// Queues several steps.
    pub fn steps(mut self, steps: impl IntoIterator<Item = Step>) -> Self {
        self.steps.extend(steps);
        self
    }

    /// Adds every rule of a script (after the rules already added) and queues its steps.
    pub fn script(self, script: Script) -> Self {
        let Script { rules, steps } = script;
        rules
            .into_iter()
            .fold(self, MockServerBuilder::rule)
            .steps(steps)
    }

    /// Adds a declarative rule: like [`when`](Self::when) with the rule's conditions.
    pub fn rule(self, rule: ScriptRule) -> Self {
        let ScriptRule { when, step } = rule;
        self.when(move |request| when.matches(request), step)
    }

    /// Queues a turn.
    pub fn turn(self, turn: Turn) -> Self {
        self.step(turn)
    }

    /// Queues a fault.
    pub fn fault(self, fault: Fault) -> Self {
        self.step(fault)
    }

    /// Answers every model request for which `predicate` holds with `step`, before
    /// looking at the queue. Rules are tried in the order they were added.
    /// The predicate runs while the server's state is locked: keep it quick.
    pub fn when(
        self,
        predicate: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        step: impl Into<Step>,
    ) -> Self {
        self.add_rule(Arc::new(predicate), step.into(), false)
    }

    /// Like [`when`](Self::when), but the rule is removed after its first use.
    pub fn when_once(
        self,
        predicate: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        step: impl Into<Step>,
    ) -> Self {
        self.add_rule(Arc::new(predicate), step.into(), true)
    }

    fn add_rule(mut self, predicate: Predicate, step: Step, once: bool) -> Self {
        self.rules.push(Rule {
            predicate,
            step,
            once,
        });
        self
    }

    /// When the queue runs out, start it again from its first step.
    pub fn looping(mut self, on: bool) -> Self {
        self.looping = on;
        self
    }

    /// Listens on this port instead of a free one (0, the default).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Answers every request (model turns and the model list) that does not carry `key` — as
    /// `authorization: Bearer KEY` (OpenAI) or `x-api-key: KEY` (Anthropic) — with HTTP 401 and
    /// an OpenAI-style error body that echoes the key it got, as real APIs do. The request is
    /// recorded; no step is taken.
    pub fn require_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Answers `GET /props` as a llama.cpp server does, with `props` (JSON text: its
    /// `default_generation_settings.n_ctx`, `chat_template_caps`); without it `/props` is 404.
    pub fn props(mut self, props: impl Into<String>) -> Self {
        self.props = Some(props.into());
        self
    }

    /// Whether [`MockServer::requests`] keeps every request (the default). A long-lived server
    /// that nobody asks (the `baton-mock` binary, which has `--log` for that) keeps none, so its
    /// memory and its time per request do not grow with the requests it has answered.
    pub fn keep_requests(mut self, keep: bool) -> Self {
        self.keep_requests = keep;
        self
    }

    /// Calls `hook` with every request right after it is recorded.
    pub fn on_request(mut self, hook: impl Fn(&RecordedRequest) + Send + Sync + 'static) -> Self {
        self.on_request = Some(Arc::new(hook));
        self
    }

    /// Binds 127.0.0.1 and starts serving on the current tokio runtime.
    pub async fn try_start(self) -> io::Result<MockServer> {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, self.port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State_ {
                steps: self.steps,
                next: 0,
                looping: self.looping,
                rules: self.rules,
                requests: Vec::new(),
                keep_requests: self.keep_requests,
                received: 0,
                served: 0,
            }),
            on_request: self.on_request,
            key: self.key,
            props: self.props,
            connections: std::sync::atomic::AtomicUsize::new(0),
        });
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::disable())
            .with_state(Arc::clone(&shared));
        let counted = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            // The accept loop only ends with an I/O error on the listener; there is
            // nobody to report it to, and the server simply stops answering.
            // Small writes (an answer's deltas) go out at once, as a real model server's do:
            // with Nagle's algorithm on, a reused connection waits for the client's delayed
            // acknowledgement (40 ms) between them.
            use axum::serve::ListenerExt as _;
            let listener = listener.tap_io(move |tcp| {
                let _ = tcp.set_nodelay(true);
                counted
                    .connections
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
            let _ = axum::serve(listener, app).await;
        });
        Ok(MockServer {
            addr,
            shared,
            task,
            runtime: None,
        })
    }

    /// Like [`try_start`](Self::try_start), but panics if 127.0.0.1 cannot be bound
    /// (a test cannot go on without its server).
    pub async fn start(self) -> MockServer {
        match self.try_start().await {
            Ok(server) => server,
            Err(err) => panic!("baton-testkit: cannot start the mock server on 127.0.0.1: {err}"),
        }
    }

    /// Starts the server on a runtime of its own (one worker thread), for
    /// synchronous tests, e.g. of a CLI binary. Must not be called from async code.
    pub fn try_start_blocking(self) -> io::Result<MockServer> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("baton-mock-server")
            .enable_all()
            .build()?;
        let mut server = runtime.block_on(self.try_start())?;
        server.runtime = Some(runtime);
        Ok(server)
    }

    /// Like [`try_start_blocking`](Self::try_start_blocking), panicking on failure.
    pub fn start_blocking(self) -> MockServer {
        match self.try_start_blocking() {
            Ok(server) => server,
            Err(err) => panic!("baton-testkit: cannot start the mock server on 127.0.0.1: {err}"),
        }
    }
}

/// A running mock model server. It stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MockServer {
    pub fn builder() -> MockServerBuilder {
        MockServerBuilder {
            steps: Vec::new(),
            rules: Vec::new(),
            looping: false,
            port: 0,
            on_request: None,
            key: None,
            keep_requests: true,
            props: None,
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash; clients append `/v1/…`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many TCP connections the server has accepted so far.
    pub fn connections(&self) -> usize {
        self.shared
            .connections
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The requests that went to one of the three model APIs.
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r.wire_format().is_some())
            .cloned()
            .collect()
    }

    /// Panics unless every tool result in every model request so far answers a tool call of
    /// the assistant turn right before it (see [`crate::assert_tool_results_answer_calls`]).
    pub fn assert_tool_results_answer_calls(&self) {
        crate::conversation::assert_tool_results_answer_calls(&self.model_requests());
    }

    /// How many queued steps have not been played yet (in the current pass when looping).
    pub fn remaining(&self) -> usize {
        let state = self.shared.lock();
        state.steps.len().saturating_sub(state.next)
    }

    /// The queued steps not played yet.
    pub fn remaining_steps(&self) -> Vec<Step> {
        let state = self.shared.lock();
        state
            .steps
            .get(state.next..)
            .map(<[Step]>::to_vec)
            .unwrap_or_default()
    }

    /// Queues one more step while the server runs.
    pub fn push(&self, step: impl Into<Step>) {
        self.shared.lock().steps.push(step.into());
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// What to answer, decided while the state is locked.
enum Decision {
    Play {
        format: WireFormat,
        seq: u64,
        step: Step,
    },
    Exhausted {
        format: WireFormat,
        number: usize,
    },
    ModelList,
    Props,
    NotFound,
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let record = RecordedRequest {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_string(), |pq| pq.as_str().to_string()),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: parse_body(&body),
    };
    if let Some(key) = &shared.key {
        let header = |name: &str| {
            record
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let sent = header("x-api-key")
            .or_else(|| header("authorization").map(|v| v.strip_prefix("Bearer ").unwrap_or(v)));
        if sent != Some(key.as_str()) {
            shared.lock().record(&record);
            if let Some(hook) = &shared.on_request {
                hook(&record);
            }
            let body = obj! {
                "error": obj! {
                    "message": format!("Incorrect API key provided: {}.", sent.unwrap_or("")),
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                },
            };
            return json_response(StatusCode::UNAUTHORIZED, body.text());
        }
    }
    let decision = {
        let mut state = shared.lock();
        let number = state.record(&record);
        match Route::classify(method.as_str(), uri.path()) {
            Route::Model(format) => {
                state.served += 1;
                let seq = state.served;
                match state.take_step(&record) {
                    Some(step) => Decision::Play { format, seq, step },
                    None => Decision::Exhausted { format, number },
                }
            }
            Route::ModelList => Decision::ModelList,
            Route::Props if shared.props.is_some() => Decision::Props,
            Route::Props | Route::Unknown => Decision::NotFound,
        }
    };
    if let Some(hook) = &shared.on_request {
        hook(&record);
    }
    match decision {
        Decision::Play { format, seq, step } => play(format, seq, step, &record.body),
        Decision::Exhausted { format, number } => {
            let message = format!(
                "baton-testkit mock server: the script ran out of steps at request #{number} ({} {}); \
                 queue more steps or add a rule",
                record.method, record.path
            );
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                render::error_body(format, 500, &message),
            )
        }
        Decision::ModelList => {
            let list = obj! {
                "object": "list",
                "data": vec![obj! {
                    "id": "gpt-5.5",
                    "object": "model",
                    "created": CREATED,
                    "owned_by": "baton-testkit",
                }],
            };
            json_response(StatusCode::OK, list.text())
        }
        Decision::Props => json_response(StatusCode::OK, shared.props.clone().unwrap_or_default()),
        Decision::NotFound => {
            let message = format!(
                "baton-testkit mock server: no route for {} {}",
                record.method, record.path
            );
            let body = obj! {
                "error": obj! {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": crate::json::J::Null,
                    "code": "not_found",
                },
            };
            json_response(StatusCode::NOT_FOUND, body.text())
        }
    }
}

fn parse_body(body: &Bytes) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

fn play(format: WireFormat, seq: u64, step: Step, request: &Value) -> Response {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(FALLBACK_MODEL);
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let include_usage = request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let ctx = Ctx { seq, model };
    let sse = |events: Vec<String>, delay_ms: u64, cut: bool| {
        sse_response(format, seq, events, delay_ms, cut)
    };
    match step {
        Step::Turn(turn) if stream => sse(
            render::turn_events(format, &turn, &ctx, include_usage),
            turn.delay_ms_per_chunk,
            false,
        ),
        Step::Turn(turn) => {
            let mut response =
                json_response(StatusCode::OK, render::turn_body(format, &turn, &ctx));
            add_request_id(response.headers_mut(), format, seq);
            response
        }
        Step::Fault(Fault::Status {
            status,
            retry_after_secs,
            message,
            body,
        }) => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let text = match body {
                Some(Value::String(text)) => text,
                Some(other) => other.to_string(),
                None => render::error_body(format, code.as_u16(), &message),
            };
            let mut response = json_response(code, text);
            if let Some(secs) = retry_after_secs {
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(secs));
            }
            add_request_id(response.headers_mut(), format, seq);
            response
        }
        Step::Fault(Fault::DropMidStream { turn, after_events }) => {
            let mut events = render::turn_events(format, &turn, &ctx, include_usage);
            events.truncate(after_events);
            sse(events, turn.delay_ms_per_chunk, true)
        }
        Step::Fault(Fault::MalformedSse { turn }) => sse(
            render::malformed_events(format, &turn, &ctx),
            turn.delay_ms_per_chunk,
            false,
        ),
        Step::Fault(Fault::InStreamError { message }) => sse(
            render::in_stream_error_events(format, &message, &ctx),
            0,
            false,
        ),
    }
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn add_request_id(headers: &mut HeaderMap, format: WireFormat, seq: u64) {
    let name = match format {
        WireFormat::Chat | WireFormat::Responses => HeaderName::from_static("x-request-id"),
        WireFormat::Anthropic => HeaderName::from_static("request-id"),
    };
    if let Ok(value) = HeaderValue::from_str(&format!("req_mock{seq}")) {
        headers.insert(name, value);
    }
}

/// Streams `events`, pausing `delay_ms` between two of them. With `cut`, the body
/// fails after the last event, which makes the server drop the connection without
/// finishing the response.
fn sse_response(
    format: WireFormat,
    seq: u64,
    events: Vec<String>,
    delay_ms: u64,
    cut: bool,
) -> Response {
    struct Feed {
        events: std::vec::IntoIter<String>,
        first: bool,
        cut: bool,
    }
    let feed = Feed {
        events: events.into_iter(),
        first: true,
        cut,
    };
    let stream = futures::stream::unfold(feed, move |mut feed| async move {
        if let Some(event) = feed.events.next() {
            if !feed.first && delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            feed.first = false;
            return Some((Ok::<Bytes, io::Error>(Bytes::from(event)), feed));
        }
        if feed.cut {
            feed.cut = false;
            // Give the connection one turn to write out what was already produced;
            // an error from the body makes hyper drop whatever is still buffered.
            tokio::task::yield_now().await;
            return Some((
                Err(io::Error::other(
                    "baton-testkit: connection dropped by the script",
                )),
                feed,
            ));
        }
        None
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    add_request_id(headers, format, seq);
    response
}
