//! `baton-mock`: serves a script file on 127.0.0.1 until it is killed.
//!
//! Prints one line, the base URL (`http://127.0.0.1:PORT`), once it accepts
//! connections. Stops on SIGINT or SIGTERM.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context;
use baton_testkit::{MockServer, Script};
use clap::Parser;

/// Mock model server speaking the OpenAI Chat Completions, OpenAI Responses and
/// Anthropic Messages wire formats, answering from a script file.
#[derive(Debug, Parser)]
#[command(name = "baton-mock", version)]
struct Args {
    /// Script file: a JSON list of steps, or an object with "rules" and "steps"
    /// (see the baton-testkit docs).
    #[arg(long, value_name = "FILE")]
    script: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Append every received request to FILE as one JSON object per line.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Start the steps again from the first when they run out (rules never run out).
    #[arg(long = "loop")]
    looping: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let script = match Script::load(&args.script) {
        Ok(script) => script,
        Err(err) => {
            eprintln!("baton-mock: {err}");
            return ExitCode::from(2);
        }
    };
    match run(args, script) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("baton-mock: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args, script: Script) -> anyhow::Result<()> {
    // One thread: a request is read, answered and written where it arrived, with no hand-over
    // between threads (the time a client waits for its answer is the figure benches read).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    runtime.block_on(serve(args, script))
}

async fn serve(args: Args, script: Script) -> anyhow::Result<()> {
    let mut builder = MockServer::builder()
        .script(script)
        .looping(args.looping)
        .port(args.port)
        .keep_requests(false);
    if let Some(path) = &args.log {
        let file = File::create(path)
            .with_context(|| format!("cannot create log file {}", path.display()))?;
        let file = Mutex::new(file);
        builder = builder.on_request(move |request| {
            let Ok(line) = serde_json::to_string(request) else {
                return;
            };
            let mut file = file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // A log that cannot be written must not take the server down.
            let _ = writeln!(file, "{line}").and_then(|()| file.flush());
        });
    }
    let server = builder
        .try_start()
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;

    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", server.url()).context("cannot write to stdout")?;
    stdout.flush().context("cannot write to stdout")?;
    drop(stdout);

    wait_for_shutdown_signal().await?;
    drop(server);
    Ok(())
}

#[cfg(unix)]
async fn wait_for_shutdown_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("cannot listen for SIGINT"),
        _ = terminate.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn wait_for_shutdown_signal() -> anyhow::Result<()> {
    tokio::signal::ctrl_c()
        .await
        .context("cannot listen for Ctrl-C")
}
