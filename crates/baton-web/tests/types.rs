//! The page's modules against the documents' types: `tsc -p crates/baton-web` (`tsconfig.json`)
//! checks every module that opts in with `// @ts-check` (all four: `model.js`, `vlist.js`,
//! `views.js`, `app.js`) against `src/assets/projection.d.ts`, which baton-events derives from
//! the Rust types (`baton_events::projection::Doc`), and against the DOM's. So a document field
//! the page reads that the server does not send is a failure here. TypeScript comes from the
//! browser tests' packages (`npm ci --prefix crates/baton-web/tests/browser`); without them or
//! node the test is skipped with a note (a failure in CI, which installs both).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_page_s_modules_read_the_documents_as_the_rust_types_say() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tsc = dir.join("tests/browser/node_modules/.bin/tsc");
    let skip = |why: String| {
        assert!(
            std::env::var_os("CI").is_none(),
            "tsc is needed to check the page's modules: {why}"
        );
        eprintln!("skipped: {why}");
    };
    if !tsc.is_file() {
        return skip(format!(
            "{} is missing: run `npm ci --prefix crates/baton-web/tests/browser`",
            tsc.display()
        ));
    }
    let out = match std::process::Command::new(&tsc)
        .arg("-p")
        .arg(dir.join("tsconfig.json"))
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            return skip(format!(
                "{} did not run (is node installed?): {e}",
                tsc.display()
            ))
        }
    };
    assert!(
        out.status.success(),
        "tsc -p {} found type errors:\n{}{}",
        dir.join("tsconfig.json").display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
