#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `grep`, `find` and `ls` on real temporary directories.

// Inside `tools` so that `cargo nextest run -p baton-agent tools` selects these tests.
mod tools {
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    use baton_agent::tools::{builtin_tools, ToolContext, ToolOutput};
    use serde_json::{json, Value};

    async fn call(tool: &str, args: Value, ctx: &ToolContext) -> ToolOutput {
        let tools = builtin_tools();
        let t = tools.iter().find(|t| t.name() == tool).unwrap();
        t.run(args, ctx).await
    }

    fn put(root: &Path, rel: &str, content: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    /// A small project: sources, an ignored build dir, a hidden dir, a .git dir and a binary.
    fn project() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let r = ctx.root.clone();
        put(&r, ".gitignore", "target/\n*.log\n");
        put(
            &r,
            "src/main.rs",
            "fn main() {\n    println!(\"needle\");\n}\n",
        );
        put(
            &r,
            "src/lib.rs",
            "// Needle in a comment\npub fn find_needle() {}\n",
        );
        put(&r, "src/util/mod.rs", "pub fn helper() {}\n");
        put(&r, "README.md", "docs mention needle too\n");
        put(&r, "target/debug/out.rs", "needle in build output\n");
        put(&r, "run.log", "needle in a log\n");
        put(&r, ".hidden/secret.rs", "needle hidden\n");
        put(&r, ".git/config", "needle in git\n");
        fs::write(r.join("data.bin"), b"needle\0binary").unwrap();
        (dir, ctx)
    }

    #[tokio::test]
    async fn grep_respects_gitignore_hidden_binary_and_git() {
        let (_d, ctx) = project();
        let out = call("grep", json!({"pattern": "needle"}), &ctx).await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(
        out.output,
        "README.md:1:docs mention needle too\nsrc/lib.rs:2:pub fn find_needle() {}\nsrc/main.rs:2:    println!(\"needle\");\n"
    );
    }

    #[tokio::test]
    async fn grep_options() {
        let (_d, ctx) = project();
        let out = call(
            "grep",
            json!({"pattern": "needle", "ignore_case": true, "glob": "*.rs"}),
            &ctx,
        )
        .await;
        assert_eq!(
        out.output,
        "src/lib.rs:1:// Needle in a comment\nsrc/lib.rs:2:pub fn find_needle() {}\nsrc/main.rs:2:    println!(\"needle\");\n"
    );

        let out = call(
            "grep",
            json!({"pattern": "println!(", "literal": true, "path": "src"}),
            &ctx,
        )
        .await;
        assert_eq!(out.output, "src/main.rs:2:    println!(\"needle\");\n");
        assert_eq!(out.path.as_deref(), Some("src"));

        let out = call("grep", json!({"pattern": "println!("}), &ctx).await;
        assert!(out.is_error);
        assert!(
            out.output.contains("invalid regular expression"),
            "{}",
            out.output
        );
        assert!(out.output.contains("literal"), "{}", out.output);

        let out = call(
            "grep",
            json!({"pattern": "needle", "path": "src/main.rs", "context": 1}),
            &ctx,
        )
        .await;
        assert_eq!(
            out.output,
            "src/main.rs-1-fn main() {\nsrc/main.rs:2:    println!(\"needle\");\nsrc/main.rs-3-}\n"
        );

        let out = call("grep", json!({"pattern": "needle", "limit": 2}), &ctx).await;
        assert!(
            out.output
                .starts_with("README.md:1:docs mention needle too\nsrc/lib.rs:2:"),
            "{}",
            out.output
        );
        assert!(
            out.output.contains("stopped after 2 matches"),
            "{}",
            out.output
        );

        let out = call("grep", json!({"pattern": "nothing-like-this"}), &ctx).await;
        assert!(!out.is_error);
        assert!(out.output.starts_with("No matches"), "{}", out.output);

        // Naming a hidden directory explicitly, or through the glob, searches it.
        let out = call(
            "grep",
            json!({"pattern": "needle", "path": ".hidden"}),
            &ctx,
        )
        .await;
        assert_eq!(out.output, ".hidden/secret.rs:1:needle hidden\n");
        let out = call(
            "grep",
            json!({"pattern": "needle", "glob": ".hidden/*.rs"}),
            &ctx,
        )
        .await;
        assert_eq!(out.output, ".hidden/secret.rs:1:needle hidden\n");
    }

    #[tokio::test]
    async fn grep_paths_are_relative_to_cwd() {
        let (_d, ctx) = project();
        let ctx = ctx.with_cwd("src");
        let out = call("grep", json!({"pattern": "needle", "path": "."}), &ctx).await;
        assert_eq!(
            out.output,
            "lib.rs:2:pub fn find_needle() {}\nmain.rs:2:    println!(\"needle\");\n"
        );
        let out = call("grep", json!({"pattern": "docs", "path": ".."}), &ctx).await;
        assert_eq!(out.output, "../README.md:1:docs mention needle too\n");
    }

    #[tokio::test]
    async fn find_globs() {
        let (_d, ctx) = project();
        let out = call("find", json!({"pattern": "*.rs"}), &ctx).await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(out.output, "src/lib.rs\nsrc/main.rs\nsrc/util/mod.rs\n");

        let out = call("find", json!({"pattern": "src/*.rs"}), &ctx).await;
        assert_eq!(out.output, "src/lib.rs\nsrc/main.rs\n");

        let out = call(
            "find",
            json!({"pattern": "**/*.{md,rs}", "path": "src"}),
            &ctx,
        )
        .await;
        assert_eq!(out.output, "src/lib.rs\nsrc/main.rs\nsrc/util/mod.rs\n");

        let out = call("find", json!({"pattern": "*", "limit": 2}), &ctx).await;
        assert_eq!(
            out.output.lines().take(2).collect::<Vec<_>>(),
            ["README.md", "data.bin"],
            "{}",
            out.output
        );
        assert!(
            out.output.contains("showing the first 2 of 5 matches"),
            "{}",
            out.output
        );

        let out = call("find", json!({"pattern": ".hidden/**"}), &ctx).await;
        assert_eq!(out.output, ".hidden/secret.rs\n");

        let out = call("find", json!({"pattern": "*.nothing"}), &ctx).await;
        assert!(!out.is_error);
        assert!(out.output.starts_with("No files match"), "{}", out.output);

        let out = call("find", json!({"pattern": "a["}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("invalid glob"), "{}", out.output);
    }

    #[tokio::test]
    async fn ls_lists_one_directory() {
        let (_d, ctx) = project();
        symlink("src", ctx.root.join("link")).unwrap();
        let out = call("ls", json!({}), &ctx).await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(
        out.output,
        ".git/\n.gitignore\n.hidden/\nREADME.md\ndata.bin\nlink -> src/\nrun.log\nsrc/\ntarget/\n"
    );
        let out = call("ls", json!({"path": "src"}), &ctx).await;
        assert_eq!(out.output, "lib.rs\nmain.rs\nutil/\n");
        assert_eq!(out.path.as_deref(), Some("src"));

        let out = call("ls", json!({"path": "src/main.rs"}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("use `read`"), "{}", out.output);
        let out = call("ls", json!({"path": "nope"}), &ctx).await;
        assert!(out.is_error);

        fs::create_dir(ctx.root.join("empty")).unwrap();
        let out = call("ls", json!({"path": "empty"}), &ctx).await;
        assert!(!out.is_error);
        assert!(out.output.contains("is empty"), "{}", out.output);
    }

    #[tokio::test]
    async fn ls_caps_large_directories() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        for i in 0..510 {
            fs::write(ctx.root.join(format!("f{i:04}")), "").unwrap();
        }
        let out = call("ls", json!({}), &ctx).await;
        assert!(out.output.starts_with("f0000\nf0001\n"));
        assert!(out.output.contains("f0499\n"));
        assert!(!out.output.contains("f0500"));
        assert!(
            out.output
                .contains("[10 more entries not shown (510 in all)"),
            "{}",
            out.output
        );
    }
}
