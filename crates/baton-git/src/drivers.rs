//! The filter and merge drivers a repository's own config declares, switched off on every git
//! call baton makes (see the crate's hardening).
//!
//! Learning them costs a `git config --list` per call. Two things keep that off most calls
//! without ever letting a driver run:
//!
//! - a command that never runs a driver ([`runs_no_driver`]: it reads refs and objects, never
//!   the work tree or the index's contents) needs no overrides at all;
//! - in a pinned work tree ([`crate::pin`]) what was learned is kept with the exact bytes of
//!   every config file git reads there. It is used again only while each file still holds
//!   exactly those bytes (read again before each call: a few hundred bytes, against a process),
//!   and never when the config includes another file (which could change unseen). Content, not
//!   times: git rewrites its config on calls that change nothing in it (`branch -d` removes a
//!   section that is not there), and a change in the same clock tick keeps a file's times.
//!   Work trees of one repository whose config files hold the same bytes share what was
//!   learned: the local and worktree scopes are those bytes and nothing else.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use crate::pin::Pinned;
use crate::{Git, Result};

/// The keys of a driver whose program git runs on its own (by attribute, without being asked):
/// filters (`clean`, `smudge`, `process`) and merge drivers.
const DRIVER_PROGRAMS: &[(&str, &[&str])] = &[
    ("filter", &["clean", "smudge", "process"]),
    ("merge", &["driver"]),
];

/// Commands that never run a filter or merge driver, whatever their arguments: they read and
/// write refs, objects and config, never a file of the work tree. (Anything not named here
/// gets the overrides: deny by default. Git aliases cannot shadow these built-in names.)
const DRIVER_FREE: &[&str] = &[
    "rev-parse",
    "merge-base",
    "rev-list",
    "var",
    "show-ref",
    "for-each-ref",
    "symbolic-ref",
    "update-ref",
    "branch",
    "config",
];

/// Whether git run with `args` can never start a driver (see [`DRIVER_FREE`]).
pub(crate) fn runs_no_driver(args: &[&std::ffi::OsStr]) -> bool {
    match args {
        [first, ..] if DRIVER_FREE.iter().any(|c| *first == *c) => true,
        [first, second, ..] => *first == "worktree" && *second == "list",
        _ => false,
    }
}

/// What a config file holds: `None` when it does not exist (or cannot be read, which git
/// would then not read either; an unreadable file is never equal to one that was read).
type FileText = Option<Vec<u8>>;

fn file_text(path: &Path) -> FileText {
    std::fs::read(path).ok()
}

/// The config files git reads for a pinned work tree (its own and the common dir's, with a
/// `config.worktree` for each: more than git reads is only more careful).
fn config_files(pin: &Pinned) -> [PathBuf; 4] {
    [
        pin.common_dir.join("config"),
        pin.common_dir.join("config.worktree"),
        pin.git_dir.join("config"),
        pin.git_dir.join("config.worktree"),
    ]
}

/// The drivers (section, name) a repository's config declares.
type Drivers = BTreeSet<(String, String)>;

/// What was learned, by the bytes of the config files it was learned from.
static LEARNED: Mutex<Option<HashMap<Vec<FileText>, Drivers>>> = Mutex::new(None);

/// How many entries [`LEARNED`] keeps before it starts again (a long-lived process that sees
/// many configs, such as the dashboard, stays small).
const LEARNED_MAX: usize = 64;

/// The drivers of the repository `list` runs git in (a [`Git::command_in`]), kept for a
/// pinned work tree as the module says.
pub(crate) fn drivers(list: Command, pin: Option<&Pinned>) -> BTreeSet<(String, String)> {
    let Some(pin) = pin else {
        return listed(list).0;
    };
    let files: Vec<FileText> = config_files(pin).iter().map(|f| file_text(f)).collect();
    {
        let learned = LEARNED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(drivers) = learned.as_ref().and_then(|m| m.get(&files)) {
            return drivers.clone();
        }
    }
    let (drivers, includes) = listed(list);
    if includes {
        return drivers;
    }
    let mut learned = LEARNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let map = learned.get_or_insert_with(HashMap::new);
    if map.len() >= LEARNED_MAX {
        map.clear();
    }
    map.insert(files, drivers.clone());
    drivers
}

/// The drivers (`filter` / `merge` section, subsection name) that the repository's own config
/// declares, as git itself reads that config: `git config --list --show-scope -z` run as `list`
/// (a [`Git::command_in`]), so whatever git follows (`commondir`, `config.worktree`, includes, a
/// `.git` file's target) is what baton learns, and names are matched as git matches them
/// (section names case-insensitively). Listing config runs nothing. Only the `local` and
/// `worktree` scopes count: the user's own (`global`) drivers, such as LFS, still apply.
/// Also says whether those scopes include another file.
fn listed(mut list: Command) -> (BTreeSet<(String, String)>, bool) {
    list.args(["config", "--list", "--show-scope", "-z"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut names = BTreeSet::new();
    let Ok(out) = list.output() else {
        return (names, true);
    };
    let mut includes = false;
    let fields: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    for pair in fields.chunks(2) {
        let [scope, entry] = pair else { continue };
        if !matches!(*scope, b"local" | b"worktree") {
            continue;
        }
        let key = entry.split(|b| *b == b'\n').next().unwrap_or_default();
        let key = String::from_utf8_lossy(key);
        // Keys come lower-cased in their section and name: `include.path`, `includeif.…`.
        includes |= key.starts_with("include.") || key.starts_with("includeif.");
        for (section, programs) in DRIVER_PROGRAMS {
            let Some(rest) = key.strip_prefix(section).and_then(|r| r.strip_prefix('.')) else {
                continue;
            };
            // `SUBSECTION.KEY`: the subsection may hold dots, the key does not.
            if let Some((name, program)) = rest.rsplit_once('.') {
                if programs.contains(&program) && !name.is_empty() {
                    names.insert(((*section).to_string(), name.to_string()));
                }
            }
        }
    }
    (names, includes)
}

/// `-c` settings that switch off every driver in `drivers`: empty filter commands run nothing
/// and `required=false` lets content pass through unchanged; a merge driver becomes `false`,
/// so a file it would have merged is a conflict, never a program of the repository's choosing.
pub(crate) fn driver_overrides(drivers: &BTreeSet<(String, String)>) -> Vec<String> {
    drivers
        .iter()
        .flat_map(|(section, n)| match section.as_str() {
            "filter" => vec![
                format!("filter.{n}.clean="),
                format!("filter.{n}.smudge="),
                format!("filter.{n}.process="),
                format!("filter.{n}.required=false"),
            ],
            _ => vec![format!("merge.{n}.driver=false")],
        })
        .collect()
}

/// The `-c` settings that switch off every filter and merge driver the repository at `dir`
/// declares in its own config, as git reads it (see [`Git`]'s hardening).
pub fn repo_filter_overrides(dir: &Path) -> Result<Vec<String>> {
    let pin = crate::pin::pinned_for(dir)?;
    let list = Git::new(dir).command_in(pin.as_ref());
    Ok(driver_overrides(&drivers(list, pin.as_ref())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn only_commands_that_never_touch_the_work_tree_skip_the_overrides() {
        fn os(v: &[&'static str]) -> Vec<&'static OsStr> {
            v.iter().map(|s| OsStr::new(*s)).collect()
        }
        for free in [
            &["rev-parse", "HEAD"][..],
            &["branch", "-d", "x"],
            &["worktree", "list", "--porcelain"],
            &["merge-base", "--is-ancestor", "a", "b"],
        ] {
            assert!(runs_no_driver(&os(free)), "{free:?}");
        }
        for driven in [
            &["status"][..],
            &["worktree", "add", "x"],
            &["worktree", "remove", "x"],
            &["merge", "--ff-only", "x"],
            &["rebase", "main"],
            &["cat-file", "--filters", "HEAD:a"],
            &["hash-object", "a"],
            &["ls-files", "-m"],
            &["worktree"],
            &[],
        ] {
            assert!(!runs_no_driver(&os(driven)), "{driven:?}");
        }
    }

    /// What was learned is kept while the config files hold the same bytes (even rewritten by
    /// git, as `branch -d` does), learned again after a byte changes, and never kept for a
    /// config that includes another file. `list` here is a script that says what a file holds
    /// and counts its calls.
    #[test]
    fn what_was_learned_is_kept_by_the_config_bytes_and_never_across_an_include() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let ok = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(ok.success());
        let config = repo.join(".git/config");
        // Bytes no other test's repository holds (what was learned is shared by content).
        let own = format!(
            "{}[baton-test]\n\tid = {}\n",
            std::fs::read_to_string(&config).unwrap(),
            tmp.path().display()
        );
        std::fs::write(&config, &own).unwrap();
        let pin = crate::pin::pin(&repo).unwrap().unwrap();
        let (answer, calls) = (tmp.path().join("answer"), tmp.path().join("calls"));
        std::fs::write(&answer, b"local\0filter.one.clean\ncat\0").unwrap();
        let list = || {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(r#"echo >> "$0"; cat "$1""#)
                .arg(&calls)
                .arg(&answer);
            c
        };
        let count = || {
            std::fs::read_to_string(&calls)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let one: BTreeSet<_> = [("filter".to_string(), "one".to_string())].into();
        assert_eq!(drivers(list(), Some(&pin)), one);
        assert_eq!(drivers(list(), Some(&pin)), one);
        assert_eq!(count(), 1, "learned once");
        // Rewritten with the same bytes: still known.
        std::fs::write(&config, &own).unwrap();
        assert_eq!(drivers(list(), Some(&pin)), one);
        assert_eq!(count(), 1);
        // One byte more: learned again.
        std::fs::write(&config, format!("{own}\n")).unwrap();
        std::fs::write(&answer, b"local\0filter.two.smudge\ncat\0").unwrap();
        let two: BTreeSet<_> = [("filter".to_string(), "two".to_string())].into();
        assert_eq!(drivers(list(), Some(&pin)), two);
        assert_eq!(count(), 2);
        // A config that includes another file is asked every time.
        std::fs::write(&answer, b"local\0include.path\ninc\0").unwrap();
        std::fs::write(&config, format!("{own}[include]\n\tpath = inc\n")).unwrap();
        drivers(list(), Some(&pin));
        drivers(list(), Some(&pin));
        assert_eq!(count(), 4);
    }
}
