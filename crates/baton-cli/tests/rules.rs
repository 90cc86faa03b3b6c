//! AGENTS.md's rules, checked. Each test reads the workspace's sources and names every place that
//! breaks one rule, with the fix; a rule that has an exception lists it here with its reason, so
//! the exception is as visible as the rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::sync::OnceLock;

#[path = "common/source.rs"]
mod source;
use source::{rust_files, without_tests, workspace};

/// One source file: its path from the workspace root, and its text split into the part that
/// ships (`product`) and its tests.
struct Source {
    rel: String,
    product: String,
    tests: String,
}

/// Every `.rs` file of every crate (sources, tests, benches), split into what ships and what
/// tests it. A file under `tests/` or named `tests.rs` / `*_tests.rs` is all test; a source
/// file's test part is its unit-test module. Read once for all the tests of this file.
fn sources() -> &'static [Source] {
    static SOURCES: OnceLock<Vec<Source>> = OnceLock::new();
    SOURCES.get_or_init(read_sources)
}

fn read_sources() -> Vec<Source> {
    let root = workspace();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| !f.components().any(|c| c.as_os_str() == "target"))
        // This file names what it looks for.
        .filter(|f| !f.ends_with("crates/baton-cli/tests/rules.rs"))
        .map(|f| {
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = fs::read_to_string(&f).unwrap();
            let name = f.file_name().unwrap().to_string_lossy();
            let all_test = rel.contains("/tests/")
                || name == "tests.rs"
                || name.ends_with("_tests.rs")
                || rel.contains("/benches/")
                || name == "build.rs";
            let (product, tests) = if all_test {
                (String::new(), text)
            } else {
                let product = without_tests(&text);
                (product.to_string(), text[product.len()..].to_string())
            };
            Source {
                rel,
                product,
                tests,
            }
        })
        .collect()
}

/// The lines of `text` that contain `needle` and are not comments: `file:line: text`. `first`
/// is the line number `text` starts at.
fn hits(rel: &str, text: &str, first: usize, needle: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle) && !l.trim_start().starts_with("//"))
        .map(|(i, l)| format!("{rel}:{}: {}", first + i, l.trim()))
        .collect()
}

/// `needle` in the shipped code of every file except those whose path starts with one of
/// `allowed`.
fn in_product(needle: &str, allowed: &[&str]) -> Vec<String> {
    sources()
        .iter()
        .filter(|s| !allowed.iter().any(|a| s.rel.starts_with(a)))
        .flat_map(|s| hits(&s.rel, &s.product, 1, needle))
        .collect()
}

fn assert_none(found: Vec<String>, rule: &str) {
    assert!(found.is_empty(), "{rule}:\n{}", found.join("\n"));
}

#[test]
fn git_runs_only_through_baton_git() {
    let found = in_product(r#"Command::new("git")"#, &["crates/baton-git/"]);
    assert_none(
        found,
        "git started outside baton-git (unhardened: planted config, filters and hooks run) — call baton_git::Git",
    );
}

/// The `#[derive(…)]` lines naming `derive` in the shipped code of files under `under`, whose
/// neighbours (`lines`, the line's index) fail `ok`: `file:line: text`.
fn derives(under: &str, derive: &str, ok: impl Fn(&[&str], usize) -> bool) -> Vec<String> {
    sources()
        .iter()
        .filter(|s| s.rel.starts_with(under))
        .flat_map(|s| {
            let lines: Vec<&str> = s.product.lines().collect();
            (0..lines.len())
                .filter(|&i| {
                    lines[i].trim_start().starts_with("#[derive(") && lines[i].contains(derive)
                })
                .filter(|&i| !ok(&lines, i))
                .map(|i| format!("{}:{}: {}", s.rel, i + 1, lines[i].trim()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every `baton` start parses its arguments: a subcommand enum whose members are built even
/// when another one runs cost about 1 ms of CPU at every start (bench/README.md).
#[test]
fn the_cli_builds_only_the_subcommand_it_runs() {
    let found = derives("crates/", "Subcommand", |lines, i| {
        lines.get(i + 1).map(|n| n.trim()) == Some("#[command(defer = true)]")
    });
    assert_none(
        found,
        "a subcommand enum built whole at every start — put `#[command(defer = true)]` on the line after its derive",
    );
    // A deferred subcommand's arguments are built after its enum variant's doc is applied, so
    // the doc comment of its `Args` struct would replace the variant's as the command's help.
    let docs = derives("crates/baton-cli/src/", "Args", |lines, i| {
        i == 0 || !lines[i - 1].trim_start().starts_with("///")
    });
    assert_none(
        docs,
        "a doc comment on an `Args` struct becomes its subcommand's help once the subcommand is built — write it as a `//` comment (the enum variant's doc is the help)",
    );
}

/// Test support builds its own runtimes: the mock model server runs on a thread of its own
/// inside the test process.
#[test]
fn async_runtimes_are_built_in_one_place() {
    let allowed = ["crates/baton-app/src/runtime.rs", "crates/baton-testkit/"];
    let mut found = in_product("runtime::Builder", &allowed);
    found.extend(in_product("Runtime::new(", &allowed));
    assert_none(
        found,
        "an async runtime built by hand — use baton_app::runtime (a command's runtime; never one nested in another)",
    );
}

/// The program's own file is resolved once (`baton_process::own_program`) and its path pinned: a
/// session asked the kernel for it twice, and once the file is replaced (an upgrade while a
/// session runs) the kernel names it `… (deleted)`, which no later child could be started from.
#[test]
fn the_own_program_is_resolved_in_one_place() {
    assert_none(
        in_product(
            "std::env::current_exe(",
            &["crates/baton-process/src/lib.rs"],
        ),
        "the program's own file read again — use baton_process::own_program()",
    );
}

/// `SessionTmp` names the session's temp dir without creating it (most sessions never run
/// `bash`; `tempfile` would create it at start-up), and removes it on drop.
#[test]
fn temp_dirs_come_from_tempfile() {
    let allowed = "crates/baton-cli/src/agent_cmd.rs";
    let found: Vec<String> = sources()
        .iter()
        .filter(|s| s.rel != allowed)
        .flat_map(|s| {
            let mut h = hits(&s.rel, &s.product, 1, "env::temp_dir()");
            h.extend(hits(&s.rel, &s.tests, 1, "env::temp_dir()"));
            h
        })
        .collect();
    assert_none(
        found,
        "a temp dir made by hand (a guessable name, left behind on a panic) — use tempfile::tempdir / tempfile::Builder",
    );
}

/// The protocol's own sets (`ThinkingLevel`, `ModelClass`, `SandboxMode`, `SourceKind`) and
/// `WorkflowKind` parse with rules and errors of their own (`RouteParseError`, the flag's
/// message, any case) that other crates rely on.
#[test]
fn closed_sets_of_words_use_the_macro() {
    let found = in_product(
        "fn as_str(self) -> &'static str",
        &[
            "crates/baton-protocol/src/lib.rs",
            "crates/baton-protocol/src/route.rs",
            "crates/baton-protocol/src/sandbox.rs",
            "crates/baton-protocol/src/project_event.rs",
            // Parsed in any case, `_` for `-` (`codebase_health`), with its own error.
            "crates/baton-workflow/src/route/mod.rs",
        ],
    );
    assert_none(
        found,
        "a hand-written `as_str` — declare the set with baton_protocol::closed_set! (its serde words, parse and ALL come from one list); a display text that is not the set's word is a `label`",
    );
}

#[test]
fn no_size_lint_is_switched_off() {
    let found: Vec<String> = sources()
        .iter()
        .flat_map(|s| {
            let mut h = hits(&s.rel, &s.product, 1, "clippy::too_many_");
            h.extend(hits(&s.rel, &s.tests, 1, "clippy::too_many_"));
            h
        })
        .collect();
    assert_none(
        found,
        "a size lint allowed — split the function into named steps, or pass a struct",
    );
}

/// Lines printed to the terminal go through `outln!` / `errln!` (control characters escaped,
/// secrets redacted). The process guard prints before it `exec`s, with nothing else loaded; the
/// test kit is not shipped.
#[test]
fn printing_goes_through_outln_and_errln() {
    let allowed = [
        "crates/baton-text/",
        "crates/baton-testkit/",
        "crates/baton-process/src/guard",
    ];
    assert_none(
        in_product("println!(", &allowed),
        "println!/eprintln! in shipped code — use outln!/errln! (baton-text)",
    );
}

/// The comment that marks a sleep whose subject is time itself (a timeout that must not count
/// while queued; nothing may start within a window), on the line above it.
const TIME_IS_THE_SUBJECT: &str = "time is the subject";

/// A sleep in a test is only a poll's pause: it sits inside a loop that checks an observable
/// state (better: `fixture::wait_until`). A sleep outside a loop waits for time to pass, and
/// time is not synchronisation — unless time is what the test is about, said on the line above.
/// Benchmarks are not tests.
#[test]
fn tests_sleep_only_inside_a_poll() {
    let found = in_test_lines(|lines, i| {
        let (line, t) = (lines[i], lines[i].trim_start());
        if t.starts_with("//") || !(t.contains("::sleep(") || t.starts_with("sleep(")) {
            return false;
        }
        if i > 0 && lines[i - 1].to_lowercase().contains(TIME_IS_THE_SUBJECT) {
            return false;
        }
        !in_a_loop(&lines[..i], line.len() - t.len())
    });
    assert_none(
        found,
        "a test sleeps outside a poll — wait for what it waits on (fixture::wait_until, a file, a line, an event)",
    );
}

/// The test lines (of shipped crates, benchmarks left out) that `hit` points at, as
/// `file:line: text`; `hit` gets a test's lines and the index of the one to judge.
fn in_test_lines(mut hit: impl FnMut(&[&str], usize) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for s in sources().iter().filter(|s| !s.rel.contains("/benches/")) {
        let offset = s.product.lines().count();
        let lines: Vec<&str> = s.tests.lines().collect();
        for i in 0..lines.len() {
            if hit(&lines, i) {
                found.push(format!(
                    "{}:{}: {}",
                    s.rel,
                    offset + i + 1,
                    lines[i].trim_start()
                ));
            }
        }
    }
    found
}

/// A test asserts no time it measured (`elapsed()`, compared in an `assert!`): speed is a
/// benchmark's, printed, and a time on a shared machine fails a test for the machine's sake. A
/// bound that tells "at once" from "never" (a cancel that ends a 30 s command) says `time is the
/// subject` in the comment above the assert, with why. Benchmarks are not tests.
#[test]
fn tests_assert_a_time_only_when_time_is_the_subject() {
    let found = in_test_lines(|lines, i| {
        if !lines[i].trim_start().starts_with("assert!(") {
            return false;
        }
        // The assert's whole statement, up to its closing `);`.
        let end = (i..lines.len())
            .find(|&k| lines[k].trim_end().ends_with(");"))
            .unwrap_or(i);
        let statement = lines[i..=end].join(" ");
        // A time measured: `elapsed()`, or the usual names of one kept from it.
        let timed = ["elapsed", "took", "latency"]
            .iter()
            .any(|w| statement.contains(w));
        let compared = [" < ", " <= ", " > ", " >= "]
            .iter()
            .any(|op| statement.contains(op));
        let said = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.trim_start().starts_with("//"))
            .any(|l| l.to_lowercase().contains(TIME_IS_THE_SUBJECT));
        timed && compared && !said
    });
    assert_none(
        found,
        "a test asserts a time — print it in a benchmark, or say `time is the subject` (and why) above the assert",
    );
}

/// Whether a line indented by `indent` after `before` sits in a loop: some block that encloses
/// it, up to its function, is a `while`, `loop` or `for`.
fn in_a_loop(before: &[&str], mut indent: usize) -> bool {
    for l in before.iter().rev() {
        let t = l.trim_start();
        let at = l.len() - t.len();
        if t.is_empty() || at >= indent {
            continue;
        }
        indent = at;
        if t.starts_with("while ")
            || t.starts_with("loop {")
            || t.starts_with("for ")
            || t.contains("= loop {")
        {
            return true;
        }
        if fn_name(l).is_some() || indent == 0 {
            return false;
        }
    }
    false
}

/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 150;

/// Functions still over [`MAX_FN_LINES`], with the length they may not pass: the list only
/// shrinks (split one into named steps and take it off).
const LONG_FUNCTIONS: &[(&str, &str, usize)] = &[];

/// The functions of `text` (shipped code) and their length in lines.
fn functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let mut depth = 0i32;
        let mut started = false;
        for (j, l) in lines[i..].iter().enumerate() {
            let code = strip_literals(l);
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        started = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if !started && code.trim_end().ends_with(';') {
                break;
            }
            if started && depth <= 0 {
                out.push((name.clone(), j + 1));
                break;
            }
        }
    }
    out
}

/// The name of the function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return None;
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let before_ok = words[..at].iter().all(|w| {
        w.starts_with("pub") || matches!(*w, "async" | "const" | "unsafe" | "extern" | "\"C\"")
    });
    if !before_ok {
        return None;
    }
    let name: String = words
        .get(at + 1)?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// A line's code without string and character literals or a trailing comment, so their
/// braces are not counted.
fn strip_literals(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '/' if chars.peek() == Some(&'/') => break,
            '\'' => {
                // A char literal ('{', '\n') — not a lifetime ('a).
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    chars.next();
                    chars.next();
                    chars.next();
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.next();
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[test]
fn functions_stay_short() {
    let mut found = Vec::new();
    let mut seen = Vec::new();
    for s in sources() {
        for (name, len) in functions(&s.product) {
            if len <= MAX_FN_LINES {
                continue;
            }
            match LONG_FUNCTIONS
                .iter()
                .find(|(f, n, _)| *f == s.rel && *n == name)
            {
                Some((_, _, most)) => {
                    if len > *most {
                        found.push(format!(
                            "{}: fn {name} grew to {len} lines (it may not pass {most}; it should shrink)",
                            s.rel
                        ));
                    }
                    seen.push((s.rel.clone(), name));
                }
                None => found.push(format!(
                    "{}: fn {name} is {len} lines (at most {MAX_FN_LINES})",
                    s.rel
                )),
            }
        }
    }
    for (file, name, _) in LONG_FUNCTIONS {
        if !seen.iter().any(|(f, n)| f == file && n == name) {
            found.push(format!(
                "{file}: fn {name} is no longer over {MAX_FN_LINES} lines: take it off LONG_FUNCTIONS"
            ));
        }
    }
    assert_none(
        found,
        "functions over the length limit — split them into named steps",
    );
}

#[test]
fn the_poll_finder_tells_a_poll_from_a_wait() {
    let poll = ["fn t() {", "    while !done() {", "        if busy() {"];
    assert!(in_a_loop(&poll, 12));
    let wait = ["fn t() {", "    let x = 1;", "    if busy() {"];
    assert!(!in_a_loop(&wait, 8));
    assert!(!in_a_loop(&wait, 4));
}

#[test]
fn the_function_finder_sees_through_literals() {
    let text = "fn a() {\n    let s = \"{\";\n    let c = '{';\n    // {\n}\nfn b(x: &'static str) -> usize {\n    1\n}\nfn decl();\n";
    assert_eq!(
        functions(text),
        [("a".to_string(), 5), ("b".to_string(), 3)]
    );
}

/// The docs describe what is built; a gap is listed as a limit, not as "not built yet" beside
/// a command that ships.
#[test]
fn the_docs_do_not_call_built_work_unbuilt() {
    let root = workspace();
    let mut files = vec![root.join("README.md")];
    for e in fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    let mut found = Vec::new();
    for f in files {
        let text = fs::read_to_string(&f).unwrap();
        for (i, l) in text.lines().enumerate() {
            let lower = l.to_lowercase();
            if lower.contains("not built yet") || lower.contains("not yet built") {
                found.push(format!("{}:{}: {}", f.display(), i + 1, l.trim()));
            }
        }
    }
    assert_none(
        found,
        "docs saying \"not built yet\" — say what is built, and list what is missing under a Limits heading",
    );
}
