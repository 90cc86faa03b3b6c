//! Roles: Markdown files with YAML frontmatter.
//!
//! Sources, later overriding earlier by name: the built-ins shipped in the binary, user roles in
//! `$XDG_CONFIG_HOME/baton/roles/` (default `~/.config/baton/roles/`), project roles in
//! `<project>/.baton/roles/`. A file that does not parse fails with its path and the field at
//! fault; two files declaring one name in one folder fail too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_protocol::role::{BackendKind, RoleFrontmatter, RoleSource, RoleSpec};

/// Names of the agent's own tools a role may list.
pub const KNOWN_TOOLS: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];

/// Names of the delegation tools a role may list. A main session is offered one only when its
/// role lists it; children never get them, whatever their role lists.
pub const DELEGATION_TOOLS: [&str; 3] =
    ["delegate_task", "delegate_flow", "delegate_flow_continue"];

/// Whether `name` is one of the [`DELEGATION_TOOLS`].
pub fn is_delegation_tool(name: &str) -> bool {
    DELEGATION_TOOLS.contains(&name)
}

const BUILTIN: [(&str, &str); 3] = [
    ("implementer", include_str!("../roles/implementer.md")),
    ("reviewer", include_str!("../roles/reviewer.md")),
    ("scout", include_str!("../roles/scout.md")),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error(
        "{dir}: roles `{name}` are defined twice, in {first} and {second}: rename or remove one"
    )]
    Duplicate {
        dir: String,
        name: String,
        first: String,
        second: String,
    },
    #[error("{path}: cannot read: {message}")]
    Io { path: String, message: String },
    #[error("unknown role `{name}`: known roles are {known}; add {hint} to define it")]
    Unknown {
        name: String,
        known: String,
        hint: String,
    },
}

/// Parses one role file's text. `origin` names it in errors.
pub fn parse_role(text: &str, origin: &str, source: RoleSource) -> Result<RoleSpec, RoleError> {
    let invalid = |message: String| RoleError::Invalid {
        path: origin.to_string(),
        message,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| {
            invalid("a role file must start with a `---` line opening its YAML frontmatter".into())
        })?;
    let (yaml, body) = split_frontmatter(rest).ok_or_else(|| {
        invalid("the YAML frontmatter is not closed: add a line `---` after it".into())
    })?;
    let meta: RoleFrontmatter = serde_norway::from_str(yaml).map_err(|e| {
        invalid(format!(
            "frontmatter: {e} (required: name, description, tools; optional: skills, mcp, isolation, model_class, backend, command, sandbox)"
        ))
    })?;
    if meta.name.is_empty()
        || !meta
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(invalid(format!(
            "field `name`: `{}` must be non-empty and use only letters, digits, `-` and `_`",
            meta.name
        )));
    }
    if meta.description.trim().is_empty() {
        return Err(invalid("field `description` must not be empty".into()));
    }
    for tool in &meta.tools {
        if !KNOWN_TOOLS.contains(&tool.as_str()) && !is_delegation_tool(tool) {
            return Err(invalid(format!(
                "field `tools`: unknown tool `{tool}`; known tools are {}, {}",
                KNOWN_TOOLS.join(", "),
                DELEGATION_TOOLS.join(", ")
            )));
        }
    }
    match (meta.backend, &meta.command) {
        (Some(BackendKind::Command), None) => {
            return Err(invalid(
                "field `command` is required with `backend: command`: give the program and its arguments, e.g. [sh, run.sh]".into(),
            ))
        }
        (Some(BackendKind::Command), Some(c)) if c.is_empty() || c[0].trim().is_empty() => {
            return Err(invalid("field `command` must name a program first, e.g. [sh, run.sh]".into()))
        }
        (Some(BackendKind::Baton | BackendKind::Pi | BackendKind::Codex | BackendKind::Claude) | None, Some(_)) => {
            return Err(invalid(
                "field `command` only applies with `backend: command`: add that, or remove `command`".into(),
            ))
        }
        (Some(_) | None, _) => {}
    }
    let body = body.trim().to_string();
    if body.is_empty() {
        return Err(invalid(
            "the role has no instructions: write them below the frontmatter".into(),
        ));
    }
    Ok(RoleSpec { meta, body, source })
}

fn split_frontmatter(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// The built-in roles.
pub fn builtin_roles() -> Result<Vec<RoleSpec>, RoleError> {
    BUILTIN
        .iter()
        .map(|(name, text)| parse_role(text, &format!("<built-in {name}>"), RoleSource::Builtin))
        .collect()
}

/// Loads every `*.md` of one folder. A missing folder is empty.
pub fn load_dir(dir: &Path, source: fn(String) -> RoleSource) -> Result<Vec<RoleSpec>, RoleError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(RoleError::Io {
                path: dir.display().to_string(),
                message: e.to_string(),
            })
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    paths.sort();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for path in paths {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| RoleError::Io {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        let role = parse_role(&text, &shown, source(shown.clone()))?;
        if let Some(first) = seen.insert(role.meta.name.clone(), shown.clone()) {
            return Err(RoleError::Duplicate {
                dir: dir.display().to_string(),
                name: role.meta.name.clone(),
                first,
                second: shown,
            });
        }
        out.push(role);
    }
    Ok(out)
}

/// Where roles are looked up.
#[derive(Debug, Clone)]
pub struct RoleDirs {
    pub user: Option<PathBuf>,
    pub project: Option<PathBuf>,
}

/// All effective roles, sorted by name, later sources overriding earlier ones.
pub fn load_roles(dirs: &RoleDirs) -> Result<Vec<RoleSpec>, RoleError> {
    let mut by_name: BTreeMap<String, RoleSpec> = BTreeMap::new();
    for r in builtin_roles()? {
        by_name.insert(r.meta.name.clone(), r);
    }
    if let Some(d) = &dirs.user {
        for r in load_dir(d, RoleSource::User)? {
            by_name.insert(r.meta.name.clone(), r);
        }
    }
    if let Some(d) = &dirs.project {
        for r in load_dir(d, RoleSource::Project)? {
            by_name.insert(r.meta.name.clone(), r);
        }
    }
    Ok(by_name.into_values().collect())
}

/// The effective role of one name.
pub fn find_role(dirs: &RoleDirs, name: &str) -> Result<RoleSpec, RoleError> {
    let roles = load_roles(dirs)?;
    let known = roles
        .iter()
        .map(|r| r.meta.name.clone())
        .collect::<Vec<_>>()
        .join(", ");
    roles
        .into_iter()
        .find(|r| r.meta.name == name)
        .ok_or_else(|| RoleError::Unknown {
            name: name.to_string(),
            known,
            hint: match &dirs.project {
                Some(p) => format!("{}/{name}.md", p.display()),
                None => format!(".baton/roles/{name}.md"),
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_only_the_implementer_may_delegate() {
        let roles = builtin_roles().unwrap();
        assert_eq!(roles.len(), 3);
        let tools = |name: &str| {
            roles
                .iter()
                .find(|r| r.meta.name == name)
                .unwrap()
                .meta
                .tools
                .clone()
        };
        assert_eq!(tools("reviewer"), ["read", "grep", "find", "ls"]);
        assert_eq!(tools("scout"), ["read", "grep", "find", "ls", "bash"]);
        assert_eq!(
            tools("implementer"),
            [
                "read",
                "write",
                "edit",
                "bash",
                "grep",
                "find",
                "ls",
                "delegate_task",
                "delegate_flow",
                "delegate_flow_continue"
            ]
        );
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let e = parse_role(
            "---\nname: x\ndescription: d\n---\nbody",
            "a.md",
            RoleSource::Builtin,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("a.md") && e.to_string().contains("tools"),
            "{e}"
        );
        let e = parse_role(
            "---\nname: x\ndescription: d\ntools: [read, fly]\n---\nbody",
            "b.md",
            RoleSource::Builtin,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown tool `fly`"), "{e}");
        let e = parse_role(
            "---\nname: x\ndescription: d\ntools: []\ncolour: red\n---\nbody",
            "c.md",
            RoleSource::Builtin,
        )
        .unwrap_err();
        assert!(e.to_string().contains("colour"), "{e}");
        let e = parse_role(
            "---\nname: x\ndescription: d\ntools: []\nbackend: command\n---\nbody",
            "e.md",
            RoleSource::Builtin,
        )
        .unwrap_err();
        assert!(e.to_string().contains("field `command` is required"), "{e}");
        let e = parse_role(
            "---\nname: x\ndescription: d\ntools: []\ncommand: [sh]\n---\nbody",
            "f.md",
            RoleSource::Builtin,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("only applies with `backend: command`"),
            "{e}"
        );
        let e = parse_role("no frontmatter", "d.md", RoleSource::Builtin).unwrap_err();
        assert!(e.to_string().contains("---"), "{e}");
    }

    #[test]
    fn project_overrides_user_overrides_builtin_and_duplicates_fail() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        let project = tmp.path().join("project");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let role = |name: &str, body: &str| {
            format!("---\nname: {name}\ndescription: d\ntools: [read]\n---\n{body}\n")
        };
        std::fs::write(user.join("scout.md"), role("scout", "user scout")).unwrap();
        std::fs::write(user.join("mine.md"), role("mine", "user mine")).unwrap();
        std::fs::write(project.join("s.md"), role("scout", "project scout")).unwrap();
        let dirs = RoleDirs {
            user: Some(user.clone()),
            project: Some(project.clone()),
        };
        let scout = find_role(&dirs, "scout").unwrap();
        assert_eq!(scout.body, "project scout");
        assert!(matches!(scout.source, RoleSource::Project(_)));
        assert_eq!(find_role(&dirs, "mine").unwrap().body, "user mine");
        assert!(matches!(
            find_role(&dirs, "implementer").unwrap().source,
            RoleSource::Builtin
        ));
        let e = find_role(&dirs, "ghost").unwrap_err();
        assert!(e.to_string().contains("ghost.md"), "{e}");

        std::fs::write(project.join("t.md"), role("scout", "again")).unwrap();
        let e = load_roles(&dirs).unwrap_err();
        assert!(matches!(e, RoleError::Duplicate { .. }), "{e}");
    }
}
