//! The page's model (`src/assets/model.js`, pure) under node's own test runner:
//! `tests/model.test.mjs`, on logs the binary wrote. Node is required to build nothing, but CI has
//! it (the browser tests); without it the test is skipped with a note (a failure in CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_page_model_folds_real_logs_the_same_in_any_batches() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = match std::process::Command::new("node")
        .arg("--test")
        .arg(dir.join("tests/model.test.mjs"))
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "node is needed for the page's model test: {e}"
            );
            eprintln!("skipped: node is not installed ({e})");
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
