//! The environment a Flow runs in, shared by `baton flow` and the MCP Flow tools.

use std::sync::Arc;

use baton_flow::{CrashHook, CrashMode, FlowEnv, Observer};

/// The environment a Flow runs in, for `baton flow` and `baton mcp`: the project's delegation
/// settings, the executor its units share, the crash hook of the tests (`BATON_FLOW_CRASH_AT`)
/// and who hears of each event.
pub fn flow_env_with(
    delegate: baton_exec::delegate::DelegateEnv,
    executor: Arc<baton_exec::executor::Executor>,
    observer: Option<Observer>,
) -> FlowEnv {
    let mut env = FlowEnv::new(delegate, executor);
    env.crash = std::env::var("BATON_FLOW_CRASH_AT")
        .ok()
        .and_then(|s| CrashHook::parse(&s, CrashMode::Kill));
    env.observer = observer;
    env
}
