//! Roles: Markdown files with YAML frontmatter.
//!
//! Sources, later overriding earlier by name: the built-ins shipped in the binary, user roles in
//! `$XDG_CONFIG_HOME/baton/roles/` (default `~/.config/baton/roles/`), project roles in
//! `<project>/.baton/roles/`. A file that does not parse is reported with its path, its line in
//! the file and the field at fault; two files declaring one name in one folder are reported too.
//! A bad file does not hide the good ones: [`load_roles`] returns both, and only a lookup of the
//! name a bad file declares fails.

pub mod skills;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_protocol::role::{BackendKind, RoleFrontmatter, RoleSource, RoleSpec};

/// Names of the agent's own tools a role may list.
pub const KNOWN_TOOLS: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];

/// Names of the delegation tools a role may list. A main session is offered one only when its
/// role lists it; children never get them, whatever their role lists.
pub const DELEGATION_TOOLS: [&str; 9] = [
    "delegate_task",
    "delegate_flow",
    "delegate_flow_continue",
    "delegate_flow_resume",
    "delegate_flow_abandon",
    "task_status",
    "task_wait",
    "task_cancel",
    "worker",
];

/// The model class a session of `role` runs on when nothing more explicit (a flag, a request's
/// `model`/`model_class`) chooses one: the role's `model_class` — except that a built-in role's
/// class with no route in `config` gives way, so a config that sets only `models.default_class`
/// (and its class) works with every built-in role. `None`: the role names no class, or gave way;
/// the caller uses `models.default_class`. A user or project role's class always stands.
pub fn role_class(
    role: &RoleSpec,
    config: &baton_protocol::config::Config,
) -> Option<baton_protocol::ModelClass> {
    let class = role.meta.model_class?;
    match (&role.source, config.models.class(class)) {
        (RoleSource::Builtin, None) => None,
        _ => Some(class),
    }
}

/// Whether `name` is one of the [`DELEGATION_TOOLS`].
pub fn is_delegation_tool(name: &str) -> bool {
    DELEGATION_TOOLS.contains(&name)
}

/// The general roles, then the ten workflow roles (`baton-workflow`'s dispatch table names them).
const BUILTIN: [(&str, &str); 13] = [
    ("implementer", include_str!("../roles/implementer.md")),
    ("reviewer", include_str!("../roles/reviewer.md")),
    ("scout", include_str!("../roles/scout.md")),
    (
        "component-builder",
        include_str!("../roles/component-builder.md"),
    ),
    (
        "bug-investigator",
        include_str!("../roles/bug-investigator.md"),
    ),
    ("code-reviewer", include_str!("../roles/code-reviewer.md")),
    ("failure-hunter", include_str!("../roles/failure-hunter.md")),
    (
        "integration-verifier",
        include_str!("../roles/integration-verifier.md"),
    ),
    ("planner", include_str!("../roles/planner.md")),
    (
        "plan-gap-reviewer",
        include_str!("../roles/plan-gap-reviewer.md"),
    ),
    ("doc-syncer", include_str!("../roles/doc-syncer.md")),
    ("researcher", include_str!("../roles/researcher.md")),
    ("brainstormer", include_str!("../roles/brainstormer.md")),
];

/// The names of the workflow roles among the built-ins.
pub const WORKFLOW_ROLES: [&str; 10] = [
    "component-builder",
    "bug-investigator",
    "code-reviewer",
    "failure-hunter",
    "integration-verifier",
    "planner",
    "plan-gap-reviewer",
    "doc-syncer",
    "researcher",
    "brainstormer",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleError {
    /// `line` is the line in the file (the frontmatter starts at line 2), when one is at fault.
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        path: String,
        line: Option<usize>,
        message: String,
    },
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
    #[error(
        "{path}: the role asks for `{what}`, which a project's role file may ask for only in a \
         trusted project; run `baton trust` in the project after reading the file to use it"
    )]
    Untrusted { path: String, what: String },
    #[error("unknown role `{name}`: known roles are {known}; add {hint} to define it")]
    Unknown {
        name: String,
        known: String,
        hint: String,
    },
}

/// Where the frontmatter begins in the file: its first line is the file's line 2.
const FRONTMATTER_FIRST_LINE: usize = 2;

/// Parses one role file's text. `origin` names it in errors.
pub fn parse_role(text: &str, origin: &str, source: RoleSource) -> Result<RoleSpec, RoleError> {
    let invalid = |line: usize, message: String| RoleError::Invalid {
        path: origin.to_string(),
        line: Some(line),
        message,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| {
            invalid(
                1,
                "a role file must start with a `---` line opening its YAML frontmatter".into(),
            )
        })?;
    let (yaml, body) = split_frontmatter(rest).ok_or_else(|| {
        invalid(
            1,
            "the YAML frontmatter opened here is not closed: add a line `---` after it".into(),
        )
    })?;
    // The file line of a top-level key, or of the frontmatter's first line when it is absent.
    let key_line = |key: &str| {
        FRONTMATTER_FIRST_LINE
            + yaml
                .lines()
                .position(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))
                .unwrap_or(0)
    };
    let meta: RoleFrontmatter = serde_norway::from_str(yaml).map_err(|e| {
        let line = e
            .location()
            .map_or(FRONTMATTER_FIRST_LINE, |l| l.line() + FRONTMATTER_FIRST_LINE - 1);
        let message = e.to_string();
        let hint = baton_text::yaml_quoting_hint(&message)
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        invalid(
            line,
            format!(
                "frontmatter: {}{hint} (required: name, description, tools; optional: skills, mcp, isolation, model_class, backend, command, sandbox)",
                shift_lines(&message, FRONTMATTER_FIRST_LINE - 1)
            ),
        )
    })?;
    if meta.name.is_empty()
        || !meta
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(invalid(
            key_line("name"),
            format!(
                "field `name`: `{}` must be non-empty and use only letters, digits, `-` and `_`",
                meta.name
            ),
        ));
    }
    if meta.description.trim().is_empty() {
        return Err(invalid(
            key_line("description"),
            "field `description` must not be empty".into(),
        ));
    }
    for tool in &meta.tools {
        if !KNOWN_TOOLS.contains(&tool.as_str()) && !is_delegation_tool(tool) {
            return Err(invalid(
                key_line("tools"),
                format!(
                    "field `tools`: unknown tool `{tool}`; known tools are {}, {}",
                    KNOWN_TOOLS.join(", "),
                    DELEGATION_TOOLS.join(", ")
                ),
            ));
        }
    }
    match (meta.backend, &meta.command) {
        (Some(BackendKind::Command), None) => {
            return Err(invalid(
                key_line("backend"),
                "field `command` is required with `backend: command`: give the program and its arguments, e.g. [sh, run.sh]".into(),
            ))
        }
        (Some(BackendKind::Command), Some(c)) if c.is_empty() || c[0].trim().is_empty() => {
            return Err(invalid(
                key_line("command"),
                "field `command` must name a program first, e.g. [sh, run.sh]".into(),
            ))
        }
        (Some(BackendKind::Baton | BackendKind::Pi | BackendKind::Codex | BackendKind::Claude) | None, Some(_)) => {
            return Err(invalid(
                key_line("command"),
                "field `command` only applies with `backend: command`: add that, or remove `command`".into(),
            ))
        }
        (Some(_) | None, _) => {}
    }
    let body = body.trim().to_string();
    if body.is_empty() {
        // The line after the closing `---`.
        return Err(invalid(
            FRONTMATTER_FIRST_LINE + yaml.lines().count() + 1,
            "the role has no instructions: write them below the frontmatter".into(),
        ));
    }
    Ok(RoleSpec { meta, body, source })
}

/// `text` with every `line N` moved down by `by`: the YAML parser counts from the frontmatter.
fn shift_lines(text: &str, by: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("line ") {
        let (before, after) = rest.split_at(at + "line ".len());
        out.push_str(before);
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + by).to_string()),
            Err(_) => out.push_str(&after[..digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

pub(crate) fn split_frontmatter(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// The role name a file declares, read loosely so that a file whose frontmatter does not parse
/// still says which role it meant to define; else its file name without `.md`.
fn declared_name(text: &str, path: &Path) -> Option<String> {
    let declared = text
        .lines()
        .skip(1)
        .take_while(|l| l.trim_end() != "---")
        .find_map(|l| l.strip_prefix("name:"))
        .map(|v| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
        .filter(|v| !v.is_empty());
    declared.or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
}

/// The built-in roles.
pub fn builtin_roles() -> Result<Vec<RoleSpec>, RoleError> {
    BUILTIN
        .iter()
        .map(|(name, text)| parse_role(text, &format!("<built-in {name}>"), RoleSource::Builtin))
        .collect()
}

/// A role file that could not be used, and the role it meant to define (when it says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRole {
    pub name: Option<String>,
    pub error: RoleError,
}

impl BadRole {
    /// The problem on one line, for a warning.
    pub fn one_line(&self) -> String {
        self.error
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The roles of one folder that parse, and the files that do not.
#[derive(Debug, Clone, Default)]
pub struct DirRoles {
    pub roles: Vec<RoleSpec>,
    pub bad: Vec<BadRole>,
}

/// Loads every `*.md` of one folder. A missing folder is empty; a bad file is reported in
/// `bad` and the others still load.
pub fn load_dir(dir: &Path, source: fn(String) -> RoleSource) -> DirRoles {
    let mut out = DirRoles::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.bad.push(BadRole {
                name: None,
                error: RoleError::Io {
                    path: dir.display().to_string(),
                    message: e.to_string(),
                },
            });
            return out;
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    paths.sort();
    // Every file declaring a name, so that two files of one name are both left out.
    let mut by_name: BTreeMap<String, Vec<(String, RoleSpec)>> = BTreeMap::new();
    for path in paths {
        let shown = path.display().to_string();
        let text = match baton_text::input::read_input(&path) {
            Ok(t) => t,
            Err(e) => {
                out.bad.push(BadRole {
                    name: path.file_stem().map(|s| s.to_string_lossy().into_owned()),
                    error: RoleError::Io {
                        path: shown,
                        message: e.to_string(),
                    },
                });
                continue;
            }
        };
        match parse_role(&text, &shown, source(shown.clone())) {
            Ok(role) => by_name
                .entry(role.meta.name.clone())
                .or_default()
                .push((shown, role)),
            Err(error) => out.bad.push(BadRole {
                name: declared_name(&text, &path),
                error,
            }),
        }
    }
    for (name, mut files) in by_name {
        match files.len() {
            1 => out.roles.extend(files.pop().map(|(_, r)| r)),
            _ => out.bad.push(BadRole {
                error: RoleError::Duplicate {
                    dir: dir.display().to_string(),
                    name: name.clone(),
                    first: files[0].0.clone(),
                    second: files[1].0.clone(),
                },
                name: Some(name),
            }),
        }
    }
    out
}

/// Where roles are looked up.
#[derive(Debug, Clone)]
pub struct RoleDirs {
    pub user: Option<PathBuf>,
    pub project: Option<PathBuf>,
    /// Whether the project's roles may widen what runs (`baton trust`): when it does not hold, a
    /// project role with another backend than baton's own agent or `sandbox:
    /// danger-full-access` is not used ([`RoleError::Untrusted`]).
    pub project_trusted: Trust,
}

/// Whether a project's roles may widen what runs.
#[derive(Clone)]
pub enum Trust {
    Yes,
    No,
    /// Asked again each time the roles are loaded: a project trusted when a run began stops
    /// being trusted the moment its role files or widening settings change (an agent of the run
    /// rewrote one), so a later dispatch never uses a role file on the trust given before.
    Recheck(std::sync::Arc<dyn Fn() -> bool + Send + Sync>),
}

impl Trust {
    pub fn holds(&self) -> bool {
        match self {
            Trust::Yes => true,
            Trust::No => false,
            Trust::Recheck(check) => check(),
        }
    }
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Trust::Yes => "Yes",
            Trust::No => "No",
            Trust::Recheck(_) => "Recheck",
        })
    }
}

/// What a role file asks for that widens what runs unconfined: another backend than baton's own
/// agent (a `command`, or a peer CLI), or `danger-full-access`.
pub fn widening(meta: &RoleFrontmatter) -> Option<String> {
    use baton_protocol::sandbox::SandboxMode;
    if let Some(b) = meta.backend.filter(|b| *b != BackendKind::Baton) {
        return Some(format!("backend: {}", b.as_str()));
    }
    if meta.sandbox == Some(SandboxMode::DangerFullAccess) {
        return Some("sandbox: danger-full-access".into());
    }
    None
}

/// The effective roles and the role files that could not be used.
#[derive(Debug, Clone)]
pub struct RoleSet {
    /// Sorted by name, later sources overriding earlier ones.
    pub roles: Vec<RoleSpec>,
    /// In the order found: user folder, then project folder.
    pub bad: Vec<BadRole>,
    /// Where a missing role would be defined, for the error.
    hint_dir: Option<PathBuf>,
}

impl RoleSet {
    /// The effective role of one name. Fails when a bad file declares that name (even if
    /// another source has a good one: the bad file was meant to override it), or when no source
    /// defines it.
    pub fn get(&self, name: &str) -> Result<RoleSpec, RoleError> {
        if let Some(bad) = self.bad.iter().find(|b| b.name.as_deref() == Some(name)) {
            return Err(bad.error.clone());
        }
        self.roles
            .iter()
            .find(|r| r.meta.name == name)
            .cloned()
            .ok_or_else(|| RoleError::Unknown {
                name: name.to_string(),
                known: self
                    .roles
                    .iter()
                    .map(|r| r.meta.name.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                hint: match &self.hint_dir {
                    Some(p) => format!("{}/{name}.md", p.display()),
                    None => format!(".baton/roles/{name}.md"),
                },
            })
    }

    /// The bad files that none of `asked` is looked up in: a command using only other roles
    /// skips them with a warning.
    pub fn skipped<'a>(&'a self, asked: &'a [&str]) -> impl Iterator<Item = &'a BadRole> + 'a {
        self.bad
            .iter()
            .filter(move |b| b.name.as_deref().is_none_or(|n| !asked.contains(&n)))
    }
}

/// All effective roles, and every file that could not be used.
pub fn load_roles(dirs: &RoleDirs) -> RoleSet {
    load(dirs, |_| true)
}

/// The user's and the project's role files only: what they define and which are bad (the
/// built-ins, which are never bad, are not parsed).
pub fn load_role_files(dirs: &RoleDirs) -> RoleSet {
    load(dirs, |_| false)
}

/// The roles of `dirs` over the built-ins `builtin` picks by name: each built-in is a YAML
/// parse, and a session needs one of them.
fn load(dirs: &RoleDirs, builtin: impl Fn(&str) -> bool) -> RoleSet {
    let mut by_name: BTreeMap<String, RoleSpec> = BTreeMap::new();
    let mut bad = Vec::new();
    let builtins: Result<Vec<RoleSpec>, RoleError> = BUILTIN
        .iter()
        .filter(|(name, _)| builtin(name))
        .map(|(name, text)| parse_role(text, &format!("<built-in {name}>"), RoleSource::Builtin))
        .collect();
    match builtins {
        Ok(roles) => by_name.extend(roles.into_iter().map(|r| (r.meta.name.clone(), r))),
        Err(error) => bad.push(BadRole { name: None, error }),
    }
    for (dir, source) in [
        (&dirs.user, RoleSource::User as fn(String) -> RoleSource),
        (&dirs.project, RoleSource::Project),
    ] {
        if let Some(d) = dir {
            let mut found = load_dir(d, source);
            if std::ptr::eq(dir, &dirs.project) && !dirs.project_trusted.holds() {
                let (kept, untrusted): (Vec<RoleSpec>, Vec<RoleSpec>) = found
                    .roles
                    .into_iter()
                    .partition(|r| widening(&r.meta).is_none());
                found.roles = kept;
                for r in untrusted {
                    found.bad.push(BadRole {
                        name: Some(r.meta.name.clone()),
                        error: RoleError::Untrusted {
                            path: match &r.source {
                                RoleSource::Project(p) | RoleSource::User(p) => p.clone(),
                                RoleSource::Builtin => d.display().to_string(),
                            },
                            what: widening(&r.meta).unwrap_or_default(),
                        },
                    });
                }
            }
            for role in found.roles {
                // A good role here overrides a bad file of its name in an earlier folder: that
                // file is still reported, but no longer stands for the name.
                for b in bad.iter_mut() {
                    if b.name.as_deref() == Some(role.meta.name.as_str()) {
                        b.name = None;
                    }
                }
                by_name.insert(role.meta.name.clone(), role);
            }
            bad.extend(found.bad);
        }
    }
    RoleSet {
        roles: by_name.into_values().collect(),
        bad,
        hint_dir: dirs.project.clone(),
    }
}

/// The effective role of one name (see [`RoleSet::get`]).
pub fn find_role(dirs: &RoleDirs, name: &str) -> Result<RoleSpec, RoleError> {
    // Only the built-in of that name is parsed; the others matter only to the list of known
    // roles an unknown name is answered with.
    load(dirs, |n| n == name)
        .get(name)
        .or_else(|_| load_roles(dirs).get(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [14/18] the first hour: a YAML slip in a role's frontmatter suggests quoting.
    #[test]
    fn a_colon_in_an_unquoted_value_suggests_quoting() {
        let text = "---\nname: critic\ndescription: Reviews code: finds bugs\ntools: [read]\n---\nBe critical.\n";
        let err = parse_role(
            text,
            ".baton/roles/critic.md",
            RoleSource::Project("x".into()),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("must be quoted"), "{err}");
        assert!(
            err.contains("description: \"Reviews code: finds bugs\""),
            "{err}"
        );
        assert!(err.contains(":3"), "the line is named: {err}");
    }

    /// [14/18]: a built-in role's class with no route gives way to `models.default_class`; a
    /// configured class, and any class of a user or project role, stands.
    #[test]
    fn a_builtin_roles_unset_class_gives_way_and_others_stand() {
        use baton_protocol::config::{Config, RouteList};
        use baton_protocol::ModelClass;
        let implementer = builtin_roles()
            .unwrap()
            .into_iter()
            .find(|r| r.meta.name == "implementer")
            .unwrap();
        assert_eq!(implementer.meta.model_class, Some(ModelClass::Balanced));
        let mut config = Config::default();
        config.models.fast = Some(RouteList::Many(vec!["local/q:7b".parse().unwrap()]));
        assert_eq!(role_class(&implementer, &config), None);
        config.models.balanced = Some(RouteList::Many(vec!["local/q:32b".parse().unwrap()]));
        assert_eq!(
            role_class(&implementer, &config),
            Some(ModelClass::Balanced)
        );
        let mut mine = implementer.clone();
        mine.source = RoleSource::Project(".baton/roles/implementer.md".into());
        mine.meta.model_class = Some(ModelClass::Frontier);
        assert_eq!(role_class(&mine, &config), Some(ModelClass::Frontier));
    }

    #[test]
    fn a_pi_role_with_extensions_reads_and_keeps_them_named() {
        let text = "---\nname: researcher\ndescription: web research\ntools: [read]\nskills: []\nextensions: [web-search, ./ext/fetch.ts]\n---\nResearch.\n";
        let role = parse_role(text, "researcher.md", RoleSource::Builtin).unwrap();
        assert_eq!(role.meta.extensions, ["web-search", "./ext/fetch.ts"]);
    }

    /// cc10x's ORIENT procedure is the scout's: map, one layer of callers, the project's own
    /// words, no edits, and an offer to route a change it implies.
    #[test]
    fn the_scout_follows_orient_s_procedure() {
        let scout = builtin_roles()
            .unwrap()
            .into_iter()
            .find(|r| r.meta.name == "scout")
            .unwrap();
        for step in [
            "Map first",
            "Trace one layer up",
            "the project's own names and terms",
            "propose no edits",
            "offering to route it",
        ] {
            assert!(scout.body.contains(step), "{step}");
        }
        assert_eq!(
            scout.meta.sandbox.map(|s| s.to_string()).as_deref(),
            Some("read-only")
        );
    }

    #[test]
    fn each_builtin_is_listed_under_the_name_it_declares() {
        for (key, text) in BUILTIN {
            let role = parse_role(text, key, RoleSource::Builtin).unwrap();
            assert_eq!(role.meta.name, key);
        }
    }

    #[test]
    fn builtins_parse_and_only_the_implementer_may_delegate() {
        let roles = builtin_roles().unwrap();
        assert_eq!(roles.len(), 13);
        for r in &roles {
            if r.meta.name != "implementer" {
                assert!(
                    !r.meta.tools.iter().any(|t| is_delegation_tool(t)),
                    "{} may delegate",
                    r.meta.name
                );
            }
        }
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
    fn workflow_roles_have_their_tools_sandbox_and_class() {
        use baton_protocol::route::ModelClass;
        use baton_protocol::sandbox::SandboxMode;
        let roles = builtin_roles().unwrap();
        let get = |name: &str| roles.iter().find(|r| r.meta.name == name).unwrap();
        let read_only = ["read", "grep", "find", "ls", "bash"];
        let write = ["read", "write", "edit", "bash", "grep", "find", "ls"];
        // (name, tools, read-only sandbox, class)
        let expected: [(&str, &[&str], bool, ModelClass); 10] = [
            ("component-builder", &write, false, ModelClass::Balanced),
            ("bug-investigator", &write, false, ModelClass::Balanced),
            ("code-reviewer", &read_only, true, ModelClass::Balanced),
            ("failure-hunter", &read_only, true, ModelClass::Balanced),
            (
                "integration-verifier",
                &read_only,
                true,
                ModelClass::Frontier,
            ),
            ("planner", &write, false, ModelClass::Frontier),
            (
                "plan-gap-reviewer",
                &["read", "grep", "find", "ls"],
                true,
                ModelClass::Frontier,
            ),
            ("doc-syncer", &write, false, ModelClass::Fast),
            (
                "researcher",
                &["read", "write", "bash", "grep", "find", "ls"],
                false,
                ModelClass::Balanced,
            ),
            (
                "brainstormer",
                &["read", "write", "grep", "find", "ls"],
                false,
                ModelClass::Frontier,
            ),
        ];
        assert_eq!(expected.map(|e| e.0), WORKFLOW_ROLES);
        for (name, tools, ro, class) in expected {
            let r = get(name);
            assert_eq!(r.meta.tools, tools, "{name}");
            assert_eq!(r.meta.model_class, Some(class), "{name}");
            if ro {
                // The verifier builds and runs the tests, so its shell may write (the workflow
                // runner stops it from changing a tracked file); the other judges only read.
                let sandbox = if name == "integration-verifier" {
                    SandboxMode::WorkspaceWrite
                } else {
                    SandboxMode::ReadOnly
                };
                assert_eq!(r.meta.sandbox, Some(sandbox), "{name}");
                assert!(
                    !r.meta.tools.iter().any(|t| t == "write" || t == "edit"),
                    "{name}"
                );
                assert!(r.body.contains("CONTRACT {\"s\":"), "{name}");
            } else {
                assert_ne!(r.meta.sandbox, Some(SandboxMode::ReadOnly), "{name}");
                assert!(
                    r.body
                        .contains("### Router Contract (MACHINE-READABLE)\n```yaml"),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn a_project_role_overrides_a_workflow_role_of_its_name() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join("reviewer-of-code.md"),
            "---\nname: code-reviewer\ndescription: ours\ntools: [read]\nmodel_class: frontier\nbackend: codex\n---\nour review rules\n",
        )
        .unwrap();
        let dirs = RoleDirs {
            user: None,
            project: Some(project),
            project_trusted: Trust::Yes,
        };
        let set = load_roles(&dirs);
        assert!(set.bad.is_empty(), "{:?}", set.bad);
        let r = set.get("code-reviewer").unwrap();
        assert_eq!(r.body, "our review rules");
        assert!(matches!(r.source, RoleSource::Project(_)));
        assert_eq!(r.meta.backend, Some(BackendKind::Codex));
        assert!(matches!(
            set.get("failure-hunter").unwrap().source,
            RoleSource::Builtin
        ));
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
            project_trusted: Trust::Yes,
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
        let set = load_roles(&dirs);
        assert_eq!(set.bad.len(), 1, "{:?}", set.bad);
        assert_eq!(set.bad[0].name.as_deref(), Some("scout"));
        assert!(matches!(set.bad[0].error, RoleError::Duplicate { .. }));
        let e = set.get("scout").unwrap_err();
        assert!(matches!(e, RoleError::Duplicate { .. }), "{e}");
        assert_eq!(set.get("mine").unwrap().body, "user mine");
    }

    #[test]
    fn a_rechecked_trust_is_asked_at_every_load() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join("runner.md"),
            "---\nname: runner\ndescription: d\ntools: []\nbackend: command\ncommand: [true]\n---\nRun.\n",
        )
        .unwrap();
        let trusted = std::sync::Arc::new(AtomicBool::new(true));
        let now = trusted.clone();
        let dirs = RoleDirs {
            user: None,
            project: Some(project),
            project_trusted: Trust::Recheck(std::sync::Arc::new(move || {
                now.load(Ordering::SeqCst)
            })),
        };
        assert!(find_role(&dirs, "runner").is_ok());
        trusted.store(false, Ordering::SeqCst);
        let e = find_role(&dirs, "runner").unwrap_err();
        assert!(matches!(e, RoleError::Untrusted { .. }), "{e}");
    }

    #[test]
    fn every_bad_file_is_reported_and_only_its_own_name_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        let project = tmp.path().join("project");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        // A flow sequence opened on the frontmatter's third line (the file's fourth) and never
        // closed: the parser notices at the closing `---` (the file's fifth).
        std::fs::write(
            project.join("broken.md"),
            "---\nname: broken\ndescription: d\ntools: [read\n---\nbody\n",
        )
        .unwrap();
        // An unknown tool on the file's fourth line.
        std::fs::write(
            project.join("flying.md"),
            "---\nname: flyer\ndescription: d\ntools: [fly]\n---\nbody\n",
        )
        .unwrap();
        std::fs::write(project.join("empty.md"), "no frontmatter\n").unwrap();
        std::fs::write(
            project.join("good.md"),
            "---\nname: good\ndescription: d\ntools: [read]\n---\nbody\n",
        )
        .unwrap();
        // A bad user scout is overridden by a good project scout.
        std::fs::write(user.join("scout.md"), "---\nname: scout\n---\nbody\n").unwrap();
        std::fs::write(
            project.join("scout.md"),
            "---\nname: scout\ndescription: d\ntools: [read]\n---\nproject scout\n",
        )
        .unwrap();
        let dirs = RoleDirs {
            user: Some(user.clone()),
            project: Some(project.clone()),
            project_trusted: Trust::Yes,
        };
        let set = load_roles(&dirs);
        let names: Vec<_> = set.roles.iter().map(|r| r.meta.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "brainstormer",
                "bug-investigator",
                "code-reviewer",
                "component-builder",
                "doc-syncer",
                "failure-hunter",
                "good",
                "implementer",
                "integration-verifier",
                "plan-gap-reviewer",
                "planner",
                "researcher",
                "reviewer",
                "scout"
            ]
        );
        let bad: Vec<(Option<&str>, String)> = set
            .bad
            .iter()
            .map(|b| (b.name.as_deref(), b.one_line()))
            .collect();
        assert_eq!(bad.len(), 4, "{bad:#?}");
        assert_eq!(bad[0].0, None, "overridden by the project's scout");
        assert!(bad[0].1.contains("scout.md:2: frontmatter"), "{}", bad[0].1);
        assert_eq!(bad[1].0, Some("broken"));
        assert!(
            bad[1].1.contains("broken.md:5: frontmatter"),
            "{}",
            bad[1].1
        );
        assert!(
            bad[1]
                .1
                .contains("while parsing a flow sequence at line 4 column 8"),
            "{}",
            bad[1].1
        );
        assert_eq!(bad[2].0, Some("empty"));
        assert!(bad[2].1.contains("empty.md:1: "), "{}", bad[2].1);
        assert_eq!(bad[3].0, Some("flyer"));
        assert!(
            bad[3]
                .1
                .contains("flying.md:4: field `tools`: unknown tool `fly`"),
            "{}",
            bad[3].1
        );

        assert_eq!(set.get("good").unwrap().body, "body");
        assert_eq!(set.get("scout").unwrap().body, "project scout");
        let e = set.get("broken").unwrap_err().to_string();
        assert!(e.contains("broken.md:5"), "{e}");
        assert!(set.get("flyer").is_err());
        let skipped: Vec<_> = set.skipped(&["flyer"]).map(|b| b.name.clone()).collect();
        assert_eq!(
            skipped,
            [None, Some("broken".to_string()), Some("empty".to_string())]
        );
    }

    #[test]
    fn yaml_line_numbers_count_from_the_top_of_the_file() {
        assert_eq!(
            shift_lines("x at line 3 column 1, while parsing at line 1 column 1", 1),
            "x at line 4 column 1, while parsing at line 2 column 1"
        );
        let e = parse_role(
            "---\nname: x\ndescription: d\ntools: []\ncolour: red\n---\nbody",
            "c.md",
            RoleSource::Builtin,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.md:5: frontmatter: unknown field `colour`"),
            "{e}"
        );
        assert!(e.contains("at line 5 column"), "{e}");
        let e = parse_role(
            "---\nname: x\ndescription: d\ntools: []\n---\n\n",
            "n.md",
            RoleSource::Builtin,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("n.md:6: the role has no instructions"), "{e}");
    }
}
