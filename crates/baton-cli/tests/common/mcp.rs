//! An MCP client for the `baton mcp` tests: rmcp's own client over stdio to the built binary,
//! calling tools and keeping the progress notifications it receives.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_testkit::fixture::Sandbox;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::Value;

/// A client that keeps every progress notification it receives.
#[derive(Clone, Default)]
pub struct Recorder {
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

pub type Client = RunningService<RoleClient, Recorder>;

/// `baton mcp` started in `sb` (with its environment), served to `recorder`.
pub async fn connect(sb: &Sandbox, recorder: &Recorder) -> Client {
    let cmd = tokio::process::Command::from(sb.baton(&["mcp"]));
    recorder
        .clone()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

/// Starts a tool call that the test cancels with the handle (`handle.cancel(…)`).
pub async fn call_cancellable<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> rmcp::service::RequestHandle<RoleClient> {
    use rmcp::model::{CallToolRequest, ClientRequest};
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().unwrap().clone());
    client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            rmcp::service::PeerRequestOptions::default(),
        )
        .await
        .unwrap()
}

/// Calls a tool; rmcp's client gives every call a progress token.
pub async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().unwrap().clone());
    let result = client.call_tool(params).await.unwrap();
    check_output(client, name, &result).await;
    result
}

/// Checks the result's `structuredContent`, when it has one, against the output schema the tool
/// declares in `tools/list`: every test's tool call is checked.
pub async fn check_output<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    result: &CallToolResult,
) {
    let Some(doc) = &result.structured_content else {
        return;
    };
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name} in tools/list"));
    // A compact list (`--tools core`) declares no output schema; the full list of a server
    // with every tool declares it for the same document, and is checked here in other tests.
    let Some(schema) = tool.output_schema.as_deref().cloned() else {
        return;
    };
    let schema = Value::Object(schema);
    let errors = super::schema::errors(&schema, doc);
    assert!(
        errors.is_empty(),
        "{name}: structuredContent does not match its output schema: {errors:#?}\n{doc:#}\n{schema:#}"
    );
}

/// The one text block of a result.
pub fn text(result: &CallToolResult) -> String {
    match result.content.as_slice() {
        [ContentBlock::Text(t)] => t.text.clone(),
        other => panic!("expected one text block, got {other:?}"),
    }
}

pub fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap()
}

/// The progress messages received so far (waiting up to 5 s for at least `at_least` of them: the
/// notifications precede the result on the wire, but their handler may still be running), after
/// checking that `progress` only went up.
pub async fn progress_messages(recorder: &Recorder, at_least: usize) -> Vec<String> {
    for _ in 0..100 {
        if recorder.progress.lock().unwrap().len() >= at_least {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = recorder.progress.lock().unwrap().clone();
    let values: Vec<f64> = seen.iter().map(|p| p.progress).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    seen.into_iter()
        .map(|p| p.message.unwrap_or_default())
        .collect()
}
