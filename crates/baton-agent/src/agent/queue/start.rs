//! How a session starts and how a cancelled one ends: `session.started`, an ordinary session's
//! seat, and the end a cancellation gives.

use baton_protocol::{AgentEvent, EndReason, Message, SandboxInfo, PROTOCOL_VERSION};

use super::{cancelled_message, Drive, Seat};
use crate::agent::{AgentSpec, Fallback};

/// `session.started`: who, where, on what route, and the sandbox the session's commands run in.
pub(super) fn session_started(spec: &AgentSpec, resumed: bool) -> AgentEvent {
    AgentEvent::SessionStarted {
        protocol_version: PROTOCOL_VERSION,
        session_id: spec.session_id.clone(),
        role: spec.role.meta.name.clone(),
        model: spec.route.to_string(),
        cwd: spec.cwd.display().to_string(),
        resumed,
        sandbox: Some(SandboxInfo {
            mode: spec.sandbox.mode,
            writable: spec
                .sandbox
                .writable(&spec.root, spec.tmp_dir.as_deref())
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            network: !spec.sandbox.is_confined() || spec.sandbox.network,
        }),
    }
}

/// An ordinary session's one seat: its route, then the class's fallbacks, and its history.
pub(super) fn ordinary_seat(spec: &AgentSpec, history: Vec<(Option<String>, Message)>) -> Seat {
    let chain = std::iter::once(Fallback {
        route: spec.route.clone(),
        provider: spec.provider.clone(),
        max_output_tokens: spec.max_output_tokens,
        context_window: spec.context_window,
    })
    .chain(spec.fallbacks.iter().cloned())
    .collect();
    let messages = history.into_iter().map(|(_, m)| m).collect();
    Seat::new(spec, None, chain, Vec::new(), None, messages)
}

/// How a cancelled session ends: as `last` when that already says why, else `cancelled` with
/// what was answered so far.
pub(super) fn cancelled(last: Drive) -> Drive {
    if let Drive::Ended {
        reason: Some(_), ..
    } = &last
    {
        return last;
    }
    let text = match &last {
        Drive::Ended { text, .. } => text.clone(),
        Drive::Returned | Drive::Interrupted => String::new(),
    };
    Drive::Ended {
        reason: Some(EndReason::Cancelled),
        text: cancelled_message(&text),
        error: None,
    }
}
