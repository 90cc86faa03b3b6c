//! Resolving tool paths and keeping them inside the workspace root.
//!
//! A path is resolved the way the kernel would walk it — component by component, following
//! every symlink it meets, with `..` applied to the directory actually reached — except that
//! components that do not exist yet are accepted (so `write` can create files). The result
//! contains no symlinks and no `.`/`..`, and it is accepted only if it lies under the
//! canonical root. Tools then operate on that resolved path, so what was checked is what is
//! touched.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::ToolContext;

/// How many symlinks one resolution may follow before it is called a loop (the Linux limit).
const MAX_SYMLINKS: usize = 40;

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathError(pub String);

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PathError {}

/// The workspace as one tool call sees it: canonical root and resolved working directory.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    pub(crate) root: PathBuf,
    pub(crate) cwd: PathBuf,
}

impl Workspace {
    pub(crate) fn new(ctx: &ToolContext) -> Result<Workspace, PathError> {
        let root = fs::canonicalize(&ctx.root).map_err(|e| {
            PathError(format!(
                "the workspace root {} is not accessible: {e}",
                ctx.root.display()
            ))
        })?;
        let cwd = if ctx.cwd.as_os_str().is_empty() {
            root.clone()
        } else if ctx.cwd.is_absolute() {
            ctx.cwd.clone()
        } else {
            root.join(&ctx.cwd)
        };
        let cwd = real_path(&cwd).map_err(|e| {
            PathError(format!(
                "the working directory {} cannot be resolved: {e}",
                ctx.cwd.display()
            ))
        })?;
        if !cwd.starts_with(&root) {
            return Err(PathError(format!(
                "the working directory {} is outside the workspace root {}",
                cwd.display(),
                root.display()
            )));
        }
        Ok(Workspace { root, cwd })
    }

    /// Resolves `raw` (relative to the working directory unless absolute) and checks that it
    /// stays under the root.
    pub(crate) fn resolve(&self, raw: &str) -> Result<PathBuf, PathError> {
        if raw.is_empty() {
            return Err(PathError(
                "the path is empty; give a file or directory path".to_owned(),
            ));
        }
        if raw.contains('\0') {
            return Err(PathError(format!("path {raw:?} contains a NUL byte")));
        }
        let given = Path::new(raw);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.cwd.join(given)
        };
        let real = real_path(&joined)
            .map_err(|e| PathError(format!("path `{raw}` cannot be resolved: {e}")))?;
        if real.starts_with(&self.root) {
            return Ok(real);
        }
        let lexical = lexical_normalize(&joined);
        if lexical.starts_with(&self.root) {
            Err(PathError(format!(
                "path `{raw}` leads through a symlink to {}, which is outside the workspace root {}; \
                 tools may only touch files under it",
                real.display(),
                self.root.display()
            )))
        } else {
            Err(PathError(format!(
                "path `{raw}` is outside the workspace root {}; tools may only touch files under it",
                self.root.display()
            )))
        }
    }

    /// Resolves `raw` as [`Workspace::resolve`] does, for a tool that may create it and its
    /// missing parent folders: a name that does not exist yet may not hold a control character
    /// ([`baton_text::is_control`]: ESC, CR, newline, tab …), so no tool leaves a file whose name
    /// drives the terminal of whoever lists it. Names that exist already are not checked.
    pub(crate) fn resolve_creatable(&self, raw: &str) -> Result<PathBuf, PathError> {
        let abs = self.resolve(raw)?;
        let mut at = abs.as_path();
        while fs::symlink_metadata(at).is_err() {
            let name = at
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            if let Some(c) = name.chars().find(|&c| baton_text::is_control(c)) {
                return Err(PathError(format!(
                    "field `path`: {raw:?} would create the name {name:?}, which holds the control \
                     character U+{:04X}; tools do not create names with control characters (ESC, CR, \
                     newline, tab …): give a `path` without them",
                    u32::from(c)
                )));
            }
            match at.parent() {
                Some(parent) => at = parent,
                None => break,
            }
        }
        Ok(abs)
    }

    /// How to show `abs` to the model: relative to the working directory (with `..` when it
    /// lies elsewhere in the root), or `.` for the working directory itself.
    pub(crate) fn display(&self, abs: &Path) -> String {
        relative_to(abs, &self.cwd).to_string_lossy().into_owned()
    }
}

/// Resolves `path` for a tool context; the public form of what every tool does first.
pub fn resolve_in_root(ctx: &ToolContext, raw: &str) -> Result<PathBuf, PathError> {
    Workspace::new(ctx)?.resolve(raw)
}

enum Part {
    Root,
    Up,
    Name(OsString),
}

fn parts_of(path: &Path) -> Vec<Part> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir => Some(Part::Root),
            Component::ParentDir => Some(Part::Up),
            Component::Normal(n) => Some(Part::Name(n.to_os_string())),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Like `realpath -m`: resolves symlinks and `..` in an absolute path whose tail may not
/// exist yet.
pub(crate) fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    let mut queue: VecDeque<Part> = parts_of(path).into();
    let mut out = PathBuf::from("/");
    let mut followed = 0usize;
    while let Some(part) = queue.pop_front() {
        match part {
            Part::Root => out = PathBuf::from("/"),
            Part::Up => {
                out.pop();
            }
            Part::Name(name) => {
                let next = out.join(&name);
                // Every component is looked at, even after a missing one: `missing/../link`
                // must still see `link`.
                let is_link = fs::symlink_metadata(&next)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if is_link {
                    followed += 1;
                    if followed > MAX_SYMLINKS {
                        return Err(std::io::Error::other("too many levels of symbolic links"));
                    }
                    let target = fs::read_link(&next)?;
                    for p in parts_of(&target).into_iter().rev() {
                        queue.push_front(p);
                    }
                } else {
                    out = next;
                }
            }
        }
    }
    Ok(out)
}

/// Removes `.` and applies `..` textually, without looking at the filesystem.
fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` relative to `base` (both absolute and normalized), using `..` where needed.
pub(crate) fn relative_to(path: &Path, base: &Path) -> PathBuf {
    if let Ok(rest) = path.strip_prefix(base) {
        return if rest.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rest.to_path_buf()
        };
    }
    let p: Vec<_> = path.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn ws(dir: &Path) -> Workspace {
        Workspace::new(&ToolContext::new(dir)).unwrap()
    }

    #[test]
    fn resolves_inside_and_refuses_outside() {
        let tmp = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let root = w.root.clone();
        assert_eq!(w.resolve("a/b.txt").unwrap(), root.join("a/b.txt"));
        assert_eq!(w.resolve("./a/../c").unwrap(), root.join("c"));
        assert_eq!(w.resolve(".").unwrap(), root);
        assert_eq!(
            w.resolve(root.join("x").to_str().unwrap()).unwrap(),
            root.join("x")
        );
        let err = w.resolve("../x").unwrap_err().0;
        assert!(
            err.contains("`../x` is outside the workspace root"),
            "{err}"
        );
        assert!(w.resolve("/etc/passwd").is_err());
        assert!(w.resolve("a/../../x").is_err());
        assert!(w.resolve("missing/../../x").is_err());
        assert!(w.resolve("").is_err());
    }

    #[test]
    fn follows_symlinks_like_the_kernel() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir(root.join("real")).unwrap();
        symlink(root.join("real"), root.join("inlink")).unwrap();
        symlink(outside.path(), root.join("outlink")).unwrap();
        symlink("../../nowhere", root.join("dangling_out")).unwrap();
        symlink("real/new.txt", root.join("dangling_in")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        let w = ws(&root);
        assert_eq!(w.resolve("inlink/f").unwrap(), root.join("real/f"));
        let err = w.resolve("outlink/f").unwrap_err().0;
        assert!(err.contains("through a symlink"), "{err}");
        assert!(w.resolve("outlink").is_err());
        assert!(w.resolve("missing/../outlink/f").is_err());
        assert!(w.resolve("dangling_out").is_err());
        assert_eq!(w.resolve("dangling_in").unwrap(), root.join("real/new.txt"));
        assert!(w.resolve("loop1").unwrap_err().0.contains("symbolic links"));
        // `..` after a symlink applies to the link's target, as the kernel does it.
        fs::create_dir_all(root.join("real/sub")).unwrap();
        symlink(root.join("real/sub"), root.join("sublink")).unwrap();
        assert_eq!(w.resolve("sublink/../x").unwrap(), root.join("real/x"));
    }

    #[test]
    fn cwd_is_respected_and_displayed_relative() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("sub/deeper")).unwrap();
        let ctx = ToolContext::new(tmp.path()).with_cwd("sub");
        let w = Workspace::new(&ctx).unwrap();
        assert_eq!(w.resolve("f").unwrap(), w.root.join("sub/f"));
        assert_eq!(w.resolve("../g").unwrap(), w.root.join("g"));
        assert_eq!(w.display(&w.root.join("sub/deeper/x")), "deeper/x");
        assert_eq!(w.display(&w.root.join("other/y")), "../other/y");
        assert_eq!(w.display(&w.root.join("sub")), ".");
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_to(Path::new("/a/b/c"), Path::new("/a")),
            PathBuf::from("b/c")
        );
        assert_eq!(
            relative_to(Path::new("/a"), Path::new("/a/b/c")),
            PathBuf::from("../..")
        );
        assert_eq!(
            relative_to(Path::new("/a/x"), Path::new("/a/b")),
            PathBuf::from("../x")
        );
    }
}
