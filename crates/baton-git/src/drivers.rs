//! The filter and merge drivers a repository's own config declares, switched off on every git
//! call baton makes (see the crate's hardening).
//!
//! Learning them costs a `git config --list` per call. Two things keep that off most calls
//! without ever letting a driver run:
//!
//! - a command that never runs a driver ([`runs_no_driver`]: it reads refs and objects, never
//!   the work tree or the index's contents) needs no overrides at all;
//! - in a pinned work tree ([`crate::pin`]) what was learned is kept, with the identity of every
//!   config file git reads there (device, inode, size, modification and change times). It is
//!   used again only while each file is still exactly that, never when the config includes
//!   another file (which could change unseen), and never from a file changed in the last
//!   moments before it was read (a change in the same clock tick would keep its times: git's
//!   own "racy" rule for its index).

use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

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

/// A config file is trusted to be unchanged only when it was last changed at least this long
/// before it was looked at.
const SETTLED: Duration = Duration::from_millis(100);

/// What a config file was: `None` when it did not exist.
type FileId = Option<(u64, u64, u64, i64, i64, i64, i64)>;

fn file_id(path: &Path) -> FileId {
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

/// Whether a file with this identity was last changed [`SETTLED`] before `now`.
fn settled(id: &FileId, now: SystemTime) -> bool {
    let Some((.., ctime, ctime_nsec)) = *id else {
        return true;
    };
    let (Ok(secs), Ok(nanos)) = (u64::try_from(ctime), u32::try_from(ctime_nsec)) else {
        return false;
    };
    let changed = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
    changed + SETTLED <= now
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

struct Learned {
    files: Vec<FileId>,
    drivers: BTreeSet<(String, String)>,
}

static LEARNED: Mutex<Option<HashMap<(PathBuf, PathBuf), Learned>>> = Mutex::new(None);

/// The drivers of the repository `list` runs git in (a [`Git::command_in`]), kept for a
/// pinned work tree as the module says.
pub(crate) fn drivers(list: Command, pin: Option<&Pinned>) -> BTreeSet<(String, String)> {
    let Some(pin) = pin else {
        return listed(list).0;
    };
    let key = (pin.git_dir.clone(), pin.common_dir.clone());
    let now = SystemTime::now();
    let files: Vec<FileId> = config_files(pin).iter().map(|f| file_id(f)).collect();
    {
        let learned = LEARNED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(l) = learned.as_ref().and_then(|m| m.get(&key)) {
            if l.files == files {
                return l.drivers.clone();
            }
        }
    }
    let (drivers, includes) = listed(list);
    let mut learned = LEARNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let map = learned.get_or_insert_with(HashMap::new);
    if !includes && files.iter().all(|f| settled(f, now)) {
        map.insert(
            key,
            Learned {
                files,
                drivers: drivers.clone(),
            },
        );
    } else {
        map.remove(&key);
    }
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

    #[test]
    fn a_config_file_changed_moments_ago_is_not_trusted_to_stay_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("config");
        std::fs::write(&f, "x").unwrap();
        let id = file_id(&f);
        assert!(!settled(&id, SystemTime::now()));
        assert!(settled(&id, SystemTime::now() + SETTLED * 2));
        assert!(settled(
            &file_id(&dir.path().join("missing")),
            SystemTime::now()
        ));
    }
}
