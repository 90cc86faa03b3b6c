//! `baton tui` (and `baton` alone on a terminal): an interactive session in the terminal UI of
//! `baton-tui`. The session is the one `baton agent` and `baton chat` run — same role, route,
//! sandbox, tools, transcript — with the UI as its front end (`tui_session`).

use std::io::IsTerminal;

use anyhow::{bail, Result};
use baton_app::exit::Exit;
use baton_tui::term::Mode;
use baton_tui::theme::ThemeName;
use clap::Args;

use crate::agent_cmd::AgentArgs;
use crate::tui_session::TuiFront;

#[derive(Args, Debug)]
pub struct TuiArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Draw on the main screen, keeping the transcript in the terminal's own scrollback
    /// (append-only), instead of the alternate screen.
    #[arg(long)]
    pub inline: bool,
    /// Capture the mouse (wheel scrolls the transcript; selecting text then needs Shift).
    #[arg(long)]
    pub mouse: bool,
    /// Colours for a dark or a light terminal (default dark).
    #[arg(long, value_name = "THEME")]
    pub theme: Option<ThemeName>,
    /// Follow a workflow, Flow, background task or session another process runs (one that
    /// Claude Code started through `baton mcp`, say): read-only, but a checkpoint it waits on
    /// can be answered and a Flow continued, abandoned or cleaned.
    #[arg(long, value_name = "ID")]
    pub attach: Option<String>,
}

impl TuiArgs {
    /// `baton tui` with no flags (what `baton` alone on a terminal runs).
    pub fn default_args() -> TuiArgs {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            args: TuiArgs,
        }
        <Only as clap::Parser>::parse_from(["baton tui"]).args
    }
}

pub fn run(args: TuiArgs) -> Result<Exit> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!("baton tui needs a terminal on stdin and stdout: for a pipe or a script, use `baton chat` (lines in) or `baton agent --json` (events out)");
    }
    if args.agent.json {
        bail!("baton tui --json: the terminal UI prints no events; for the JSON event stream use `baton agent --json` (or `baton chat --json`)");
    }
    if args.agent.task.as_deref() == Some("-") {
        bail!("baton tui -: stdin is the terminal the UI reads keys from; pass the first message as an argument, or type it in the UI");
    }
    if let Some(id) = &args.attach {
        return attach(&args, id);
    }
    let mut agent = args.agent;
    if agent.resume.as_deref() == Some("") {
        match pick_session(agent.cwd.clone(), args.theme.unwrap_or_default())? {
            Some(id) => agent.resume = Some(id),
            None => return Ok(Exit::Ok),
        }
    }
    let front = TuiFront::new(
        Mode {
            inline: args.inline,
            mouse: args.mouse,
        },
        args.theme.unwrap_or_default(),
    );
    let next = front.next.clone();
    agent.tui = Some(front);
    let exit = crate::agent_cmd::run(agent)?;
    // `/resume` picked another session: it goes on in the same terminal, with this command's
    // own flags, as `--resume ID` (and no first message).
    let picked = next.lock().ok().and_then(|mut n| n.take());
    let (Some(id), Some(mut again)) = (picked, crate::tui_args_again()) else {
        return Ok(exit);
    };
    again.agent.resume = Some(id);
    again.agent.task = None;
    run(again)
}

/// `baton tui --resume` alone: the saved sessions, newest first, to pick one from; its id, or
/// `None` when the user left without one.
fn pick_session(cwd: Option<std::path::PathBuf>, theme: ThemeName) -> Result<Option<String>> {
    let ctx = baton_app::project::project_context(cwd)?;
    let state = baton_app::project::state_dir(&ctx);
    let choices = crate::tui_session::session_choices(&state);
    if choices.is_empty() {
        bail!(
            "no saved sessions in {} to resume: `baton tui` starts one",
            state.sessions().display()
        );
    }
    let picked = baton_tui::picker::pick(&choices, baton_tui::theme::Theme::of(theme))?;
    Ok(picked.map(|k| choices[k].id.clone()))
}

/// `baton tui --attach ID`: the UI on another process's work, through the project event feed.
fn attach(args: &TuiArgs, id: &str) -> Result<Exit> {
    use baton_tui::Attach;
    let ctx = baton_app::project::project_context(None)?;
    let state = baton_app::project::state_dir(&ctx);
    let exists = |p: std::path::PathBuf| p.exists();
    let what = if exists(state.workflows().join(format!("{id}.events.jsonl"))) {
        Attach::Workflow(id.to_string())
    } else if exists(state.flows().join(format!("{id}.events.jsonl"))) {
        Attach::Flow(id.to_string())
    } else if exists(state.tasks().join(format!("{id}.events.jsonl"))) {
        Attach::Task(id.to_string())
    } else if exists(state.sessions().join(format!("{id}.jsonl"))) {
        Attach::Session(id.to_string())
    } else {
        bail!("--attach {id}: no workflow, Flow, background task or session of this project has that id: `baton status`, `baton flow status`, `baton task status` and `baton sessions` list them");
    };
    let (tx, rx) = std::sync::mpsc::channel();
    crate::tui_work::follow(
        state.clone(),
        ctx.project_root.clone(),
        vec![id.to_string()],
        tx.clone(),
    );
    let opts = baton_tui::Options {
        mode: Mode {
            inline: args.inline,
            mouse: args.mouse,
        },
        theme: baton_tui::theme::Theme::of(args.theme.unwrap_or_default()),
        keymap: crate::tui_session::keymap()?,
        branch: baton_git::Git::new(&ctx.cwd)
            .current_branch()
            .ok()
            .flatten(),
        seats: None,
        context_window: None,
        approval_policy: "never".into(),
        first: None,
        history: Vec::new(),
        checkpoints: Vec::new(),
        attach: Some(what),
        routes: Vec::new(),
    };
    let notes = tx.clone();
    let root = ctx.project_root.clone();
    let state_for_log = state.clone();
    let mut send =
        move |r: baton_tui::Request| match crate::tui_work::act(&root, &state, &notes, &r) {
            Some(done) => done,
            None => Err("attached: read-only; start your own session with `baton tui`".to_string()),
        };
    let _stderr = crate::tui_work::StderrToLog::new(&state_for_log);
    baton_tui::run(opts, tx, rx, &mut send)?;
    Ok(Exit::Ok)
}
