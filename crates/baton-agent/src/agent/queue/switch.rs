//! What the user changes of a running session between inputs: its route (`/model`) and its
//! conversation (`/clear`).

use baton_protocol::AgentEvent;

use super::{compact, route_usage, Fallback, RouteUsage, Running, Seat};

/// The routes `/model` switches a session to, shown and compared by their routes (a provider
/// has neither).
#[derive(Clone)]
pub struct RouteSwitch(pub Vec<Fallback>);

impl std::fmt::Debug for RouteSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|r| r.route.to_string()))
            .finish()
    }
}

impl PartialEq for RouteSwitch {
    fn eq(&self, other: &Self) -> bool {
        self.0
            .iter()
            .map(|r| &r.route)
            .eq(other.0.iter().map(|r| &r.route))
    }
}

impl Running<'_> {
    /// `/model`: the seat runs on `chain` from the next turn, said (`session.route_set`) and
    /// recorded in the transcript, so a resumed session keeps it.
    pub(super) fn switch_routes(&mut self, seat: &mut Seat, chain: Vec<Fallback>) {
        let Some(first) = chain.first() else { return };
        let from = seat.chain[seat.active].route.to_string();
        let to = first.route.to_string();
        if let Some(s) = self.store.as_mut() {
            if let Err(e) = s.route_changed(&to) {
                tracing::warn!("could not record the route change in the transcript: {e}");
            }
        }
        if from != to {
            seat.used.push(RouteUsage {
                seat: seat.tag().map(str::to_string),
                ..route_usage(&self.spec.prices, &first.route)
            });
        }
        seat.chain = chain;
        seat.active = 0;
        (self.emit)(AgentEvent::SessionRouteSet { from, to });
    }

    /// `/clear`: the seat's view is emptied, recorded as its messages withdrawn (the transcript
    /// keeps them), so a resumed session stays cleared.
    pub(super) fn clear(&mut self, seat: &mut Seat) {
        let messages = seat.messages.len();
        if messages > 0 {
            if let Some(s) = self.store.as_mut() {
                if let Err(e) = s.withdrawn(None, messages) {
                    tracing::warn!(
                        "could not record the cleared conversation in the transcript: {e}"
                    );
                }
            }
        }
        seat.messages.clear();
        seat.last_text.clear();
        seat.fit = compact::Fit::default();
        (self.emit)(AgentEvent::SessionCleared { messages });
    }
}
