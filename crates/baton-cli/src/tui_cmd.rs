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
    /// Colours for a dark or a light terminal (default: tui.theme, else dark).
    #[arg(long, value_name = "THEME")]
    pub theme: Option<ThemeName>,
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
    let mut agent = args.agent;
    agent.tui = Some(TuiFront {
        mode: Mode {
            inline: args.inline,
            mouse: args.mouse,
        },
        theme: args.theme.unwrap_or_default(),
    });
    crate::agent_cmd::run(agent)
}
