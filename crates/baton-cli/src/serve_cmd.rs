//! `baton serve`: the project's web dashboard (`baton-web`), on loopback by default.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use baton_app::exit::Exit;
use baton_app::project::{project_context, state_dir};
use clap::Args;

/// The dashboard's default address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:4680";

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Where to listen (port 0: any free one). Any address but loopback needs --token.
    #[arg(long, default_value = DEFAULT_ADDR)]
    addr: SocketAddr,
    /// The token every request must carry (`Authorization: Bearer`, or the page opened as
    /// /?token=TOKEN). Default: the user's own, in $XDG_STATE_HOME/baton/serve.token (made 0600
    /// on first use), printed in the page's address.
    #[arg(long, env = "BATON_SERVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Open the page in the browser (`xdg-open`) once the server listens.
    #[arg(long)]
    open: bool,
    /// The project's folder (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
}

pub fn run(args: ServeArgs) -> Result<Exit> {
    let ctx = project_context(args.cwd)?;
    let exe = baton_process::own_program().context("cannot find baton's own program")?;
    // Loopback is reachable by every user of the machine: a token is always needed. The user's
    // own is shown in full (only they read this terminal); one given with --token is not.
    // Off loopback the token must be given (the server refuses to start without one).
    let given = args.token.filter(|t| !t.is_empty());
    let own_token = given.is_none();
    let (token, shown) = match given {
        Some(t) => (Some(t), "…".to_string()),
        None if !args.addr.ip().is_loopback() => (None, String::new()),
        None => {
            let (t, _) = baton_app::local_http::user_token("serve")?;
            (Some(t.clone()), t)
        }
    };
    let opts = baton_web::Options {
        addr: args.addr,
        token: token.clone(),
        root: ctx.project_root.clone(),
        state: state_dir(&ctx),
        exe,
        prices: ctx.config.config.prices.clone(),
    };
    let runtime = crate::signals::runtime()?;
    let open = args.open;
    let state = state_dir(&ctx);
    let recorded = state.clone();
    let served = runtime.block_on(baton_web::serve(opts, move |local| {
        errln!("baton serve: listening on http://{local}/?token={shown} (Ctrl+C stops it)");
        // Where it listens, for `baton mcp`'s baton://dashboard (removed when it stops).
        if let Err(e) =
            baton_app::dashboard::record(&recorded, &format!("http://{local}/"), own_token)
        {
            errln!("baton serve: cannot record where it listens ({e:#}); baton://dashboard will not find it");
        }
        if open {
            let _ = std::process::Command::new("xdg-open")
                .arg(format!(
                    "http://{local}/?token={}",
                    token.as_deref().unwrap_or_default()
                ))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
    }));
    baton_app::dashboard::forget(&state);
    served?;
    Ok(Exit::Ok)
}
