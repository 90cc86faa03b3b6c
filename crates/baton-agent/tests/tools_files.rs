#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `read`, `write` and `edit` on real temporary directories, including path confinement.

// Inside `tools` so that `cargo nextest run -p baton-agent tools` selects these tests.
mod tools {
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    use baton_agent::tools::{builtin_tools, ToolContext, ToolOutput};
    use serde_json::{json, Value};

    fn workspace() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        (dir, ctx)
    }

    async fn call(tool: &str, args: Value, ctx: &ToolContext) -> ToolOutput {
        let tools = builtin_tools();
        let t = tools.iter().find(|t| t.name() == tool).unwrap();
        t.run(args, ctx).await
    }

    fn root(ctx: &ToolContext) -> &Path {
        &ctx.root
    }

    // ---------- read ----------

    #[tokio::test]
    async fn read_numbers_lines_and_honours_offset_and_limit() {
        let (_d, ctx) = workspace();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        fs::write(root(&ctx).join("f.txt"), body).unwrap();

        let out = call("read", json!({"path": "f.txt"}), &ctx).await;
        assert!(!out.is_error, "{}", out.output);
        assert!(out.output.starts_with("     1\tline 1\n     2\tline 2\n"));
        assert!(out.output.ends_with("    10\tline 10\n"));
        assert_eq!(out.path.as_deref(), Some("f.txt"));

        let out = call(
            "read",
            json!({"path": "f.txt", "offset": 4, "limit": 3}),
            &ctx,
        )
        .await;
        assert_eq!(
        out.output,
        "     4\tline 4\n     5\tline 5\n     6\tline 6\n\n[showed lines 4-6 of 10; continue with offset=7]"
    );

        let out = call("read", json!({"path": "f.txt", "offset": 11}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("past the end"), "{}", out.output);
    }

    #[tokio::test]
    async fn read_refuses_binary_files_and_directories() {
        let (_d, ctx) = workspace();
        fs::write(
            root(&ctx).join("blob.bin"),
            [0x7f, b'E', b'L', b'F', 0, 1, 2, 3],
        )
        .unwrap();
        fs::write(root(&ctx).join("latin1.txt"), b"caf\xe9\n").unwrap();
        fs::create_dir(root(&ctx).join("dir")).unwrap();

        let out = call("read", json!({"path": "blob.bin"}), &ctx).await;
        assert!(out.is_error);
        assert!(
            out.output.contains("binary file (8 bytes)"),
            "{}",
            out.output
        );

        let out = call("read", json!({"path": "latin1.txt"}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("binary"), "{}", out.output);

        let out = call("read", json!({"path": "dir"}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("is a directory"), "{}", out.output);
        assert!(out.output.contains("`ls`"), "{}", out.output);

        let out = call("read", json!({"path": "nope.txt"}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("does not exist"), "{}", out.output);
    }

    #[tokio::test]
    async fn read_resolves_relative_to_cwd() {
        let (_d, ctx) = workspace();
        fs::create_dir_all(root(&ctx).join("sub")).unwrap();
        fs::write(root(&ctx).join("sub/a.txt"), "in sub\n").unwrap();
        fs::write(root(&ctx).join("top.txt"), "at top\n").unwrap();
        let ctx = ctx.with_cwd("sub");
        assert!(call("read", json!({"path": "a.txt"}), &ctx)
            .await
            .output
            .contains("in sub"));
        assert!(call("read", json!({"path": "../top.txt"}), &ctx)
            .await
            .output
            .contains("at top"));
    }

    #[tokio::test]
    async fn bad_arguments_are_errors_naming_the_field() {
        let (_d, ctx) = workspace();
        let cases = [
            ("read", json!({}), "`path` is required"),
            ("read", json!({"path": 7}), "`path` must be a string"),
            (
                "read",
                json!({"path": "x", "offset": 0}),
                "`offset` must be a positive integer",
            ),
            (
                "read",
                json!({"path": "x", "limit": "lots"}),
                "`limit` must be a positive integer",
            ),
            ("write", json!({"path": "x"}), "`content` is required"),
            (
                "edit",
                json!({"path": "x", "old_string": "a"}),
                "`new_string` is required",
            ),
            (
                "edit",
                json!({"path": "x", "old_string": "a", "new_string": "b", "replace_all": "yes"}),
                "`replace_all` must be a boolean",
            ),
            ("bash", json!({"cmd": "ls"}), "`command` is required"),
            (
                "bash",
                json!({"command": "ls", "timeout": -1}),
                "`timeout` must be a positive number",
            ),
            (
                "grep",
                json!({"pattern": ["a"]}),
                "`pattern` must be a string",
            ),
            (
                "find",
                json!({"pattern": "*", "limit": 0}),
                "`limit` must be a positive integer",
            ),
            ("ls", json!({"path": false}), "`path` must be a string"),
            ("ls", json!([1, 2]), "expected a JSON object"),
            // The offered schema says `additionalProperties: false`; the parser agrees.
            (
                "write",
                json!({"path": "x", "content": "y", "mode": "0644"}),
                "unknown field `mode`",
            ),
        ];
        for (tool, args, want) in cases {
            let out = call(tool, args.clone(), &ctx).await;
            assert!(out.is_error, "{tool} {args}: {}", out.output);
            assert!(out.output.contains(want), "{tool} {args}: {}", out.output);
            assert!(
                out.output.contains(&format!("`{tool}`")),
                "{tool} {args}: {}",
                out.output
            );
        }
    }

    // ---------- write ----------

    #[tokio::test]
    async fn write_creates_parent_directories_and_reports_size() {
        let (_d, ctx) = workspace();
        let out = call(
            "write",
            json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(out.output, "Created `a/b/c.txt` (8 bytes, 2 lines).");
        assert_eq!(out.path.as_deref(), Some("a/b/c.txt"));
        assert_eq!(
            fs::read_to_string(root(&ctx).join("a/b/c.txt")).unwrap(),
            "one\ntwo\n"
        );

        let out = call("write", json!({"path": "a/b/c.txt", "content": "x"}), &ctx).await;
        assert!(!out.is_error, "{}", out.output);
        assert!(
            out.output
                .starts_with("Overwrote `a/b/c.txt` (1 byte, 1 line"),
            "{}",
            out.output
        );
        assert_eq!(
            fs::read_to_string(root(&ctx).join("a/b/c.txt")).unwrap(),
            "x"
        );
        // No temporary files are left behind.
        let names: Vec<_> = fs::read_dir(root(&ctx).join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);

        let out = call("write", json!({"path": "a", "content": "x"}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("is a directory"), "{}", out.output);
    }

    #[tokio::test]
    async fn write_through_an_inside_symlink_writes_the_target() {
        let (_d, ctx) = workspace();
        fs::write(root(&ctx).join("real.txt"), "old").unwrap();
        symlink("real.txt", root(&ctx).join("alias.txt")).unwrap();
        let out = call(
            "write",
            json!({"path": "alias.txt", "content": "new"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(
            fs::read_to_string(root(&ctx).join("real.txt")).unwrap(),
            "new"
        );
        assert!(fs::symlink_metadata(root(&ctx).join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    /// No tool creates a name holding a control character (an ESC in a file name drives the
    /// terminal of whoever lists the folder); a name that exists already may still be written.
    #[tokio::test]
    async fn write_refuses_to_create_names_with_control_characters() {
        let (_d, ctx) = workspace();
        for path in [
            "\u{1b}]0;TITLE\u{7}\u{1b}[2J.txt",
            "a\rb.txt",
            "new\nline/x.txt",
            "tab\t.txt",
            "ok/\u{9b}31m.txt",
        ] {
            let out = call("write", json!({"path": path, "content": "x"}), &ctx).await;
            assert!(out.is_error, "{path:?}: {}", out.output);
            assert!(
                out.output.starts_with("field `path`:")
                    && out.output.contains("control character")
                    && out.output.contains("give a `path` without them"),
                "{path:?}: {}",
                out.output
            );
            assert!(
                !baton_text::has_controls(&out.output),
                "the error shows the path escaped: {:?}",
                out.output
            );
        }
        // Nothing was created, not even a parent folder.
        assert_eq!(fs::read_dir(root(&ctx)).unwrap().count(), 0);

        fs::write(root(&ctx).join("old\u{1b}.txt"), "before").unwrap();
        let out = call(
            "write",
            json!({"path": "old\u{1b}.txt", "content": "after"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(
            fs::read_to_string(root(&ctx).join("old\u{1b}.txt")).unwrap(),
            "after"
        );
    }

    // ---------- edit ----------

    #[tokio::test]
    async fn edit_replaces_a_unique_occurrence() {
        let (_d, ctx) = workspace();
        fs::write(root(&ctx).join("m.rs"), "fn a() {}\nfn b() {}\nfn c() {}\n").unwrap();
        let out = call(
            "edit",
            json!({"path": "m.rs", "old_string": "fn b() {}", "new_string": "fn b2() {\n}"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.output);
        assert!(
            out.output
                .starts_with("Edited `m.rs`: replaced 1 occurrence at line 2 (1 line → 2 lines)."),
            "{}",
            out.output
        );
        assert!(out.output.contains("     2\tfn b2() {"), "{}", out.output);
        assert_eq!(
            fs::read_to_string(root(&ctx).join("m.rs")).unwrap(),
            "fn a() {}\nfn b2() {\n}\nfn c() {}\n"
        );
    }

    #[tokio::test]
    async fn edit_reports_missing_text_with_a_hint() {
        let (_d, ctx) = workspace();
        fs::write(root(&ctx).join("m.rs"), "fn main() {\n    let x = 1;\n}\n").unwrap();
        let out = call(
            "edit",
            json!({"path": "m.rs", "old_string": "let y = 2;", "new_string": "z"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert!(out.output.contains("not found"), "{}", out.output);

        let out = call(
            "edit",
            json!({"path": "m.rs", "old_string": "\tlet x = 1;", "new_string": "z"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.output.contains("apart from whitespace"),
            "{}",
            out.output
        );
        assert!(out.output.contains("line 2"), "{}", out.output);
        assert_eq!(
            fs::read_to_string(root(&ctx).join("m.rs")).unwrap(),
            "fn main() {\n    let x = 1;\n}\n"
        );
    }

    #[tokio::test]
    async fn edit_refuses_ambiguous_text_unless_replace_all() {
        let (_d, ctx) = workspace();
        let path = root(&ctx).join("t.txt");
        fs::write(&path, "x = 1\ny = 2\nx = 1\nx = 1\n").unwrap();
        let out = call(
            "edit",
            json!({"path": "t.txt", "old_string": "x = 1", "new_string": "x = 9"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert!(out.output.contains("occurs 3 times"), "{}", out.output);
        assert!(out.output.contains("lines 1, 3, 4"), "{}", out.output);
        assert!(out.output.contains("replace_all"), "{}", out.output);
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "x = 1\ny = 2\nx = 1\nx = 1\n"
        );

        let out = call(
        "edit",
        json!({"path": "t.txt", "old_string": "x = 1", "new_string": "x = 9", "replace_all": true}),
        &ctx,
    )
    .await;
        assert!(!out.is_error, "{}", out.output);
        assert!(
            out.output.contains("replaced 3 occurrences"),
            "{}",
            out.output
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "x = 9\ny = 2\nx = 9\nx = 9\n"
        );
    }

    #[tokio::test]
    async fn edit_rejects_no_op_and_missing_files_and_keeps_crlf() {
        let (_d, ctx) = workspace();
        fs::write(root(&ctx).join("w.txt"), "a\r\nb\r\nc\r\n").unwrap();
        let out = call(
            "edit",
            json!({"path": "w.txt", "old_string": "a", "new_string": "a"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert!(out.output.contains("identical"), "{}", out.output);

        let out = call(
            "edit",
            json!({"path": "missing.txt", "old_string": "a", "new_string": "b"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert!(out.output.contains("does not exist"), "{}", out.output);

        let out = call(
            "edit",
            json!({"path": "w.txt", "old_string": "a\nb", "new_string": "A\nB"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(
            fs::read_to_string(root(&ctx).join("w.txt")).unwrap(),
            "A\r\nB\r\nc\r\n"
        );
    }

    // ---------- confinement ----------

    #[tokio::test]
    async fn paths_outside_the_root_are_refused() {
        let outer = tempfile::tempdir().unwrap();
        let inner = outer.path().join("ws");
        fs::create_dir(&inner).unwrap();
        let ctx = ToolContext::new(&inner);
        let secret = outer.path().join("secret.txt");
        fs::write(&secret, "top secret\n").unwrap();
        symlink(outer.path(), inner.join("escape")).unwrap();
        symlink(&secret, inner.join("secret_link")).unwrap();
        let secret_abs = secret.to_str().unwrap().to_owned();

        let escapes = [
            "../secret.txt",
            secret_abs.as_str(),
            "escape/secret.txt",
            "secret_link",
            "a/../../secret.txt",
        ];
        for p in escapes {
            let out = call("read", json!({"path": p}), &ctx).await;
            assert!(out.is_error, "read {p}: {}", out.output);
            assert!(
                out.output.contains("outside the workspace root"),
                "read {p}: {}",
                out.output
            );
            assert!(!out.output.contains("top secret"));

            let out = call("write", json!({"path": p, "content": "pwned"}), &ctx).await;
            assert!(out.is_error, "write {p}: {}", out.output);
            assert!(
                out.output.contains("outside the workspace root"),
                "write {p}: {}",
                out.output
            );

            let out = call(
                "edit",
                json!({"path": p, "old_string": "top", "new_string": "pwned"}),
                &ctx,
            )
            .await;
            assert!(out.is_error, "edit {p}: {}", out.output);
            assert!(
                out.output.contains("outside the workspace root"),
                "edit {p}: {}",
                out.output
            );
        }
        // Writing a new file into a symlinked directory that leads outside is refused too.
        let out = call(
            "write",
            json!({"path": "escape/new.txt", "content": "x"}),
            &ctx,
        )
        .await;
        assert!(out.is_error, "{}", out.output);
        assert!(!outer.path().join("new.txt").exists());
        assert_eq!(fs::read_to_string(&secret).unwrap(), "top secret\n");

        for tool in ["ls", "grep", "find"] {
            let args = match tool {
                "ls" => json!({"path": ".."}),
                _ => json!({"pattern": "secret", "path": "escape"}),
            };
            let out = call(tool, args, &ctx).await;
            assert!(out.is_error, "{tool}: {}", out.output);
            assert!(
                out.output.contains("outside the workspace root"),
                "{tool}: {}",
                out.output
            );
        }
    }
}

/// Every built-in tool offers the schema its parser reads: a required field of the schema missing
/// is refused naming that field, and an object with only the required fields filled is accepted
/// by the parser (whatever the tool then does with it).
#[tokio::test]
async fn each_tool_schema_matches_its_parser() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = baton_agent::tools::ToolContext::new(dir.path());
    for tool in baton_agent::tools::builtin_tools() {
        let schema = tool.spec().parameters;
        assert_eq!(schema["additionalProperties"], serde_json::json!(false));
        let required: Vec<String> = schema["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut args = serde_json::Map::new();
        for field in &required {
            let value = match schema["properties"][field]["type"].as_str() {
                Some("string") => serde_json::json!("nothing-here"),
                Some("integer") => serde_json::json!(1),
                Some("boolean") => serde_json::json!(false),
                other => panic!("{}: field {field} of type {other:?}", tool.name()),
            };
            args.insert(field.clone(), value);
        }
        let out = tool
            .run(serde_json::Value::Object(args.clone()), &ctx)
            .await;
        assert!(
            !out.output.contains("invalid arguments"),
            "{}: {}",
            tool.name(),
            out.output
        );
        for field in &required {
            let mut fewer = args.clone();
            fewer.remove(field);
            let out = tool.run(serde_json::Value::Object(fewer), &ctx).await;
            assert!(
                out.is_error && out.output.contains(&format!("`{field}` is required")),
                "{}: {}",
                tool.name(),
                out.output
            );
        }
    }
}
