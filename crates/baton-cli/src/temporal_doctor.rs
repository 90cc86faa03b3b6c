//! `baton doctor`'s check of the Temporal engine (with the `temporal` feature).

use std::time::Duration;

use baton_app::project::ProjectContext;
use baton_temporal::mapping::Engine;
use baton_temporal::sdk;

/// `baton doctor`'s check of the engine: the service, the remote, the nodes polling.
pub async fn doctor(ctx: &ProjectContext) -> baton_app::documents::DoctorEngine {
    let mut d = baton_app::documents::DoctorEngine {
        ok: false,
        address: String::new(),
        namespace: String::new(),
        task_queue: String::new(),
        remote: None,
        nodes: Vec::new(),
        message: String::new(),
    };
    let engine = match Engine::from_config(&ctx.config.config.engine, None) {
        Ok(e) => e,
        Err(e) => {
            d.message = e.to_string();
            return d;
        }
    };
    d.address = engine.address.clone();
    d.namespace = engine.namespace.clone();
    d.task_queue = engine.task_queue.clone();
    d.remote = engine.remote.clone();
    let reach = tokio::time::timeout(
        Duration::from_secs(10),
        sdk::connect(&engine, "baton doctor"),
    );
    let client = match reach.await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            d.message = e;
            return d;
        }
        Err(_) => {
            d.message = format!("no answer from Temporal at {} within 10 s", engine.address);
            return d;
        }
    };
    let remote = match engine.remote() {
        Ok(r) => r.to_string(),
        Err(e) => {
            d.message = e;
            return d;
        }
    };
    // Through baton-git (hardened: no prompt, no pager, no repository config), off the
    // async threads; a remote that hangs is killed and reported after 20 s (a blocking task
    // left running would hold the runtime's shutdown).
    let from = remote.clone();
    let read = tokio::task::spawn_blocking(move || {
        baton_git::Git::new("/").run_output_within(
            ["ls-remote", "-q", "--heads", &from],
            Duration::from_secs(20),
        )
    });
    match read.await {
        Ok(Ok(Some(o))) if o.status.success() => {}
        Ok(Ok(Some(o))) => {
            d.message = format!(
                "cannot read `engine.remote` ({remote}): {}",
                baton_text::sanitize_line(String::from_utf8_lossy(&o.stderr).trim())
            );
            return d;
        }
        Ok(Err(e)) => {
            d.message = format!("cannot run git: {e}");
            return d;
        }
        Err(e) => {
            d.message = format!("cannot run git: {e}");
            return d;
        }
        Ok(Ok(None)) => {
            d.message = format!("`engine.remote` ({remote}) did not answer within 20 s");
            return d;
        }
    }
    match sdk::pollers(&client, &engine).await {
        Ok(nodes) if nodes.is_empty() => {
            d.message = format!(
                "no worker node polls task queue {}: start one with `baton worker-node --task-queue {}` (add `--trust` to use this project's roles and settings)",
                engine.task_queue, engine.task_queue
            );
        }
        Ok(nodes) => {
            d.nodes = nodes;
            d.ok = true;
        }
        Err(e) => d.message = e,
    }
    d
}
