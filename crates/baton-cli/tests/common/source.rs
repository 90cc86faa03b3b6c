//! Reading the workspace's own sources, for the tests that check their shape
//! (`structure.rs`, `rules.rs`).

use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the workspace root")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, recursively.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text of a file before its test modules: the first `#[cfg(test)]` line whose next line
/// declares a module (`mod tests`, `pub mod test_support`). A `#[cfg(test)]` function or
/// import in the middle of a file does not end what ships.
pub fn without_tests(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let next = &text[at + line.len()..];
        let declares_mod = next
            .trim_start()
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ")
            .starts_with("mod ");
        if line.trim() == "#[cfg(test)]" && declares_mod {
            return &text[..at];
        }
        at += line.len();
    }
    text
}
