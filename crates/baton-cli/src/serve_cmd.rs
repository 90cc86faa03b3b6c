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
    /// /?token=TOKEN); required off loopback.
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
    let exe = std::env::current_exe().context("cannot find baton's own program")?;
    let opts = baton_web::Options {
        addr: args.addr,
        token: args.token.clone(),
        root: ctx.project_root.clone(),
        state: state_dir(&ctx),
        exe,
        prices: ctx.config.config.prices.clone(),
    };
    let runtime = crate::signals::runtime()?;
    let open = args.open;
    let token = args.token.filter(|t| !t.is_empty());
    runtime.block_on(baton_web::serve(opts, move |local| {
        let url = match &token {
            Some(_) => format!("http://{local}/?token=…"),
            None => format!("http://{local}/"),
        };
        errln!("baton serve: listening on {url} (Ctrl+C stops it)");
        if open {
            let page = match &token {
                Some(t) => format!("http://{local}/?token={t}"),
                None => format!("http://{local}/"),
            };
            let _ = std::process::Command::new("xdg-open")
                .arg(page)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
    }))?;
    Ok(Exit::Ok)
}
