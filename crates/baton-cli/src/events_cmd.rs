//! `baton events`: every event of the project's durable logs, in order, optionally followed live.
//! The reading and following are in `baton-events`; this prints.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::project::{project_context, state_dir};
use baton_events::{Cursor, Event, Feed, Filter};
use baton_protocol::SourceKind;

#[derive(clap::Args)]
pub struct EventsArgs {
    /// Keep printing new events as they are appended (until interrupted).
    #[arg(long)]
    follow: bool,
    /// Start after these positions: the `pos` of the last event taken from each log, joined by
    /// commas (`flow/f1:880,workflow/wf-…:1234`); logs not named are read from their start.
    #[arg(long, value_name = "CURSOR")]
    since: Option<String>,
    /// Print one JSON envelope per line.
    #[arg(long)]
    json: bool,
    /// Only logs of these kinds: session, routing, task, flow, workflow (repeat or join with commas).
    #[arg(long, value_delimiter = ',')]
    kind: Vec<String>,
    /// Only the logs with these ids (repeat or join with commas).
    #[arg(long, value_delimiter = ',')]
    id: Vec<String>,
    /// Directory inside the project (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
}

pub fn run(args: EventsArgs) -> Result<Exit> {
    let kinds = args
        .kind
        .iter()
        .map(|k| k.parse::<SourceKind>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("--kind: {e}"))?;
    let since: Cursor = args
        .since
        .as_deref()
        .unwrap_or("")
        .parse()
        .map_err(|e| anyhow::anyhow!("--since: {e}"))?;
    let ctx = project_context(args.cwd)?;
    let state = state_dir(&ctx);
    let filter = Filter {
        kinds,
        ids: args.id,
    };
    let mut feed = Feed::new(state, filter, since);
    let json = args.json;
    let mut failed = false;
    let mut emit = |e: &Event| -> std::io::Result<()> {
        let line = if json {
            serde_json::to_string(e).map_err(std::io::Error::other)?
        } else {
            human(e)
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()
    };
    let mut report = |e: &baton_events::FeedError| {
        failed = true;
        errln!("baton: {e}");
    };
    match baton_events::follow::stream(
        &mut feed,
        &ctx.project_root,
        args.follow,
        &mut emit,
        &mut report,
    ) {
        Ok(()) => {}
        // The reader of the output went away (`baton events | head`): done.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(Exit::Ok),
        Err(e) => return Err(e.into()),
    }
    Ok(if failed { Exit::Failed } else { Exit::Ok })
}

/// One line for people: time, position, and the event's name and short fields. What the model
/// wrote cannot drive the terminal: control characters are shown as `�`.
fn human(e: &Event) -> String {
    let ts = e.ts.as_deref().unwrap_or("-");
    let text = format!("{ts} {} {}", e.pos, e.event.summary());
    baton_text::sanitize_line(&text).into_owned()
}
