//! The shape of the source tree, checked so that the claims `docs/architecture.md` makes about it
//! stay true: the crate graph it draws is the one the manifests declare, no module of a crate
//! imports a module that imports it back, and no source file grows past the size one reader can
//! hold (tests aside).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

#[path = "common/source.rs"]
mod source;
use source::{rust_files, without_tests, workspace};

/// The longest a source file may be, counting the lines before its `#[cfg(test)]` module.
const MAX_LINES: usize = 900;

fn crates() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    out.sort();
    out
}

/// The `baton-*` crates a manifest lists under `[dependencies]` (not dev- or build-dependencies).
fn declared_deps(manifest: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(manifest).unwrap();
    let value: toml::Table = text.parse().unwrap();
    value
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|deps| {
            deps.keys()
                .filter(|k| k.starts_with("baton-"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The rows of the crate table in `docs/architecture.md`: crate → the crates its "uses" column
/// names.
fn documented_deps() -> BTreeMap<String, BTreeSet<String>> {
    let doc = fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line.starts_with("| crate | uses |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || cells[1].starts_with("---") {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let uses = cells[2]
            .split(',')
            .map(|s| s.trim().trim_matches('`').to_string())
            .filter(|s| !s.is_empty() && s != "—")
            .collect();
        rows.insert(name, uses);
    }
    rows
}

#[test]
fn the_documented_crate_graph_is_the_declared_one() {
    let documented = documented_deps();
    assert!(
        !documented.is_empty(),
        "docs/architecture.md has no `| crate | uses | owns |` table"
    );
    let mut wrong = Vec::new();
    for (name, dir) in crates() {
        let declared = declared_deps(&dir.join("Cargo.toml"));
        match documented.get(&name) {
            None => wrong.push(format!("{name}: missing from the table")),
            Some(doc) if *doc != declared => wrong.push(format!(
                "{name}: the table says {doc:?}, Cargo.toml declares {declared:?}"
            )),
            Some(_) => {}
        }
    }
    for name in documented.keys() {
        if !crates().iter().any(|(n, _)| n == name) {
            wrong.push(format!("{name}: in the table but not a crate"));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_source_file_is_over_the_size_limit() {
    let mut long = Vec::new();
    for (_, dir) in crates() {
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            let lines = without_tests(&text).lines().count();
            if lines > MAX_LINES {
                long.push(format!("{}: {lines} lines", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (tests aside) — split them by concern:\n{}",
        long.join("\n")
    );
}

/// A module's path inside its crate (`["engine", "drive"]`), from its file's path under `src/`.
/// `lib.rs` and `main.rs` are the root (`[]`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return parts;
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The module paths a file's code names: `crate::a::b` and `super::c` (relative to the file's
/// module), each reduced to the longest prefix that is a module of the crate.
fn referenced_modules(
    own: &[String],
    text: &str,
    modules: &BTreeSet<Vec<String>>,
) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    // Code only: a doc link to another module is not an import.
    let code: String = without_tests(text)
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let code = code.as_str();
    let bytes = code.as_bytes();
    for prefix in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(prefix) {
            let start = from + at;
            from = start + prefix.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            let mut path: Vec<String> = if prefix == "crate::" {
                Vec::new()
            } else {
                own[..own.len().saturating_sub(1)].to_vec()
            };
            let mut rest = &code[start + prefix.len()..];
            loop {
                while let Some(r) = rest.strip_prefix("super::") {
                    path.pop();
                    rest = r;
                }
                let ident: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if ident.is_empty() {
                    break;
                }
                path.push(ident.clone());
                if !modules.contains(&path) {
                    path.pop();
                    break;
                }
                rest = &rest[ident.len()..];
                match rest.strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            out.insert(path);
        }
    }
    out
}

/// Import cycles among the child modules of one parent: for each import of module B by a file of
/// module A, the edge runs between the two children of their deepest common ancestor that hold
/// them (an import of one's own ancestor or descendant is not an edge).
fn module_cycles(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let paths: Vec<(Vec<String>, PathBuf)> = files
        .iter()
        .map(|f| (module_path(src, f), f.clone()))
        .collect();
    let modules: BTreeSet<Vec<String>> = paths.iter().map(|(m, _)| m.clone()).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (own, file) in &paths {
        let text = fs::read_to_string(file).unwrap();
        for target in referenced_modules(own, &text, &modules) {
            let common = own.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common == own.len() || common == target.len() {
                continue;
            }
            let from = own[..=common].to_vec();
            let to = target[..=common].to_vec();
            edges.entry(from).or_default().insert(to);
        }
    }
    // Depth-first search for a back edge; report each cycle once by its members.
    let mut cycles = BTreeSet::new();
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        while let Some((node, trail)) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if next == start {
                    let mut members: Vec<String> = trail.iter().map(|m| m.join("::")).collect();
                    members.sort();
                    cycles.insert(members.join(" ↔ "));
                } else if !trail.contains(next) {
                    let mut longer = trail.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    cycles.into_iter().collect()
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let mut found = Vec::new();
    for (name, dir) in crates() {
        for cycle in module_cycles(&dir.join("src")) {
            found.push(format!("{name}: {cycle}"));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other (move what both need into a module of its own):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_cycle_finder_sees_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("engine")).unwrap();
    fs::write(src.join("lib.rs"), "mod a; mod b; mod engine;").unwrap();
    fs::write(
        src.join("a.rs"),
        "/// Unlike [`crate::engine::drive`].\nuse crate::b::thing;",
    )
    .unwrap();
    fs::write(src.join("b.rs"), "pub fn thing() { crate::a::x(); }").unwrap();
    fs::write(src.join("engine/mod.rs"), "mod drive; mod steps;").unwrap();
    fs::write(src.join("engine/drive.rs"), "use super::steps::run;").unwrap();
    fs::write(
        src.join("engine/steps.rs"),
        "use crate::engine::drive::x; use crate::a;",
    )
    .unwrap();
    assert_eq!(
        module_cycles(&src),
        vec![
            "a ↔ b".to_string(),
            "engine::drive ↔ engine::steps".to_string()
        ]
    );
    // Tests may import what they like.
    fs::write(
        src.join("b.rs"),
        "pub fn thing() {}\n#[cfg(test)]\nmod tests { use crate::a::x; }",
    )
    .unwrap();
    assert_eq!(
        module_cycles(&src),
        vec!["engine::drive ↔ engine::steps".to_string()]
    );
}
