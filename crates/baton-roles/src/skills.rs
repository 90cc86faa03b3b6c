//! Skills: instructions for one kind of task, kept in a folder whose `SKILL.md` opens with YAML
//! frontmatter naming the skill (`name`) and saying when it applies (`description`); the rest of
//! the file, and any file beside it, is read by the model when the skill applies. This is the
//! format Claude Code, Codex and pi read too.
//!
//! A skill is found in the first of its locations that has it: the project's `.baton/skills/`,
//! `.claude/skills/` and `.agents/skills/`, then the user's `~/.config/baton/skills/`, then the
//! folders `skills.paths` adds. A main session is offered every skill found; a delegated child
//! gets exactly the skills its role names (seed 004: no ambient discovery in children).
//!
//! A skill is text for a model, never run by baton: what a skill's files tell a model to do runs
//! under that session's own tools and sandbox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Longest `name` (the Agent Skills format's limit).
const MAX_NAME: usize = 64;
/// Longest `description` (the Agent Skills format's limit).
const MAX_DESCRIPTION: usize = 1024;
/// Largest `SKILL.md` read for its frontmatter.
const MAX_FILE: u64 = 1024 * 1024;

baton_protocol::closed_set! {
    /// Where a skill was found.
    #[derive(PartialOrd, Ord)]
    pub enum SkillOrigin ("skill origin") {
        /// `.baton/skills/` of the project.
        Project = "project",
        /// `.claude/skills/` of the project (Claude Code's location).
        Claude = "claude",
        /// `.agents/skills/` of the project (Codex's location).
        Agents = "agents",
        /// `skills/` in the user's baton config folder.
        User = "user",
        /// A folder `skills.paths` adds.
        Config = "config",
    }
}

/// One folder skills are looked up in: each of its subfolders holding a `SKILL.md` is a skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillDir {
    pub path: PathBuf,
    pub origin: SkillOrigin,
}

/// The project-relative folders a project's skills are looked up in, in order.
pub const PROJECT_SKILL_DIRS: [(&str, SkillOrigin); 3] = [
    (".baton/skills", SkillOrigin::Project),
    (".claude/skills", SkillOrigin::Claude),
    (".agents/skills", SkillOrigin::Agents),
];

/// The folders skills are looked up in, in order: the project's three, the user's, then `extra`
/// (relative ones from the project root); a folder in `ignore` (as written in `skills.paths`'s
/// terms: a default's project-relative name, `~/…`, or a path) is left out.
pub fn skill_dirs(
    project_root: &Path,
    user_config_dir: Option<&Path>,
    extra: &[String],
    ignore: &[String],
    home: Option<&Path>,
) -> Vec<SkillDir> {
    let resolve = |p: &str| -> PathBuf {
        match (p.strip_prefix("~/"), home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ => project_root.join(p),
        }
    };
    let ignored: Vec<PathBuf> = ignore.iter().map(|p| resolve(p)).collect();
    let mut out: Vec<SkillDir> = PROJECT_SKILL_DIRS
        .iter()
        .map(|(rel, origin)| SkillDir {
            path: project_root.join(rel),
            origin: *origin,
        })
        .collect();
    if let Some(u) = user_config_dir {
        out.push(SkillDir {
            path: u.join("skills"),
            origin: SkillOrigin::User,
        });
    }
    out.extend(extra.iter().map(|p| SkillDir {
        path: resolve(p),
        origin: SkillOrigin::Config,
    }));
    out.retain(|d| !ignored.iter().any(|i| same_path(i, &d.path)));
    out
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// A skill found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    /// When the skill applies, on one line.
    pub description: String,
    /// The skill's folder (its real path: a link to a folder elsewhere is followed once, here).
    pub dir: PathBuf,
    pub origin: SkillOrigin,
}

impl Skill {
    /// The skill's `SKILL.md`.
    pub fn file(&self) -> PathBuf {
        self.dir.join(SKILL_FILE)
    }
}

/// A `SKILL.md` that could not be used, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadSkill {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for BadSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// Every skill found, by name, the first location winning.
#[derive(Clone, Debug, Default)]
pub struct SkillSet {
    /// The skills in force, by name.
    pub skills: BTreeMap<String, Skill>,
    /// Skills of a name an earlier location already had: not used.
    pub shadowed: Vec<Skill>,
    /// Files that are not usable skills.
    pub bad: Vec<BadSkill>,
}

impl SkillSet {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// The skills `names` selects, in the order named (each once), and the names that are not
    /// found.
    pub fn select(&self, names: &[String]) -> (Vec<Skill>, Vec<String>) {
        let mut found: Vec<Skill> = Vec::new();
        let mut missing = Vec::new();
        for n in names {
            match self.get(n) {
                Some(s) if !found.iter().any(|f| f.name == s.name) => found.push(s.clone()),
                Some(_) => {}
                None if !missing.contains(n) => missing.push(n.clone()),
                None => {}
            }
        }
        (found, missing)
    }
}

/// Finds the skills of `dirs`. A missing folder has none; a bad `SKILL.md` is reported in `bad`
/// and the rest still load.
pub fn discover(dirs: &[SkillDir]) -> SkillSet {
    let mut set = SkillSet::default();
    for d in dirs {
        let entries = match std::fs::read_dir(&d.path) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                set.bad.push(BadSkill {
                    path: d.path.clone(),
                    message: format!("cannot list the folder: {e}"),
                });
                continue;
            }
        };
        let mut folders: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join(SKILL_FILE).is_file())
            .collect();
        folders.sort();
        for folder in folders {
            match load_skill(&folder, d.origin) {
                Ok(skill) => match set.skills.get(&skill.name) {
                    Some(_) => set.shadowed.push(skill),
                    None => {
                        set.skills.insert(skill.name.clone(), skill);
                    }
                },
                Err(message) => set.bad.push(BadSkill {
                    path: folder.join(SKILL_FILE),
                    message,
                }),
            }
        }
    }
    set
}

/// The skills of the folders `dirs` names, each a skill's own folder (`--skill DIR`), and those
/// that are not usable skills.
pub fn load_given(dirs: &[PathBuf]) -> (Vec<Skill>, Vec<BadSkill>) {
    let mut found: Vec<Skill> = Vec::new();
    let mut bad = Vec::new();
    for d in dirs {
        match load_skill(d, SkillOrigin::Config) {
            Ok(k) if !found.iter().any(|f| f.name == k.name) => found.push(k),
            Ok(_) => {}
            Err(message) => bad.push(BadSkill {
                path: d.join(SKILL_FILE),
                message,
            }),
        }
    }
    (found, bad)
}

#[derive(Deserialize)]
struct Frontmatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

fn load_skill(folder: &Path, origin: SkillOrigin) -> Result<Skill, String> {
    let file = folder.join(SKILL_FILE);
    let text = baton_text::input::read_capped(&file, MAX_FILE).map_err(|e| e.to_string())?;
    let (name, description) = parse_skill(&text)?;
    let dir = folder
        .canonicalize()
        .map_err(|e| format!("cannot resolve the folder: {e}"))?;
    Ok(Skill {
        name,
        description,
        dir,
        origin,
    })
}

/// The `name` and one-line `description` of a `SKILL.md`'s text.
pub fn parse_skill(text: &str) -> Result<(String, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("a SKILL.md must start with a `---` line opening its YAML frontmatter (name, description)")?;
    let (yaml, _) = crate::split_frontmatter(rest)
        .ok_or("the YAML frontmatter is not closed: add a line `---` after it")?;
    let fm: Frontmatter = serde_norway::from_str(yaml).map_err(|e| {
        let message = e.to_string();
        let hint = baton_text::yaml_quoting_hint(&message)
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        format!("frontmatter: {message}{hint}")
    })?;
    let name = fm
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .ok_or("field `name` is missing: add `name: my-skill` to the frontmatter")?;
    if name.len() > MAX_NAME
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "field `name`: `{}` must be at most {MAX_NAME} letters, digits, `-` and `_`",
            baton_text::sanitize_line(&name)
        ));
    }
    let description = fm
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or("field `description` is missing: say in one sentence when the skill applies")?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "field `description` is longer than {MAX_DESCRIPTION} characters: shorten it (the body holds the detail)"
        ));
    }
    Ok((name, baton_text::sanitize_line(&description).into_owned()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn skill(root: &Path, folder: &str, text: &str) {
        let d = root.join(folder);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(SKILL_FILE), text).unwrap();
    }

    #[test]
    fn the_first_location_wins_and_bad_files_are_named() {
        let p = tempfile::tempdir().unwrap();
        let u = tempfile::tempdir().unwrap();
        let root = p.path();
        skill(
            &root.join(".baton/skills"),
            "style",
            "---\nname: style\ndescription: |\n  House style,\n  for every edit.\n---\nUse tabs.\n",
        );
        skill(
            &root.join(".claude/skills"),
            "style",
            "---\nname: style\ndescription: other\n---\n",
        );
        skill(
            &root.join(".agents/skills"),
            "pdf",
            "---\nname: pdf\ndescription: Read PDFs\nallowed-tools: Bash\n---\nbody\n",
        );
        skill(
            &u.path().join("skills"),
            "broken",
            "---\nname: broken\n---\n",
        );
        skill(&u.path().join("skills"), "noyaml", "just text\n");
        std::fs::create_dir_all(u.path().join("skills/not-a-skill")).unwrap();
        let dirs = skill_dirs(root, Some(u.path()), &[], &[], None);
        let set = discover(&dirs);
        assert_eq!(
            set.skills.keys().collect::<Vec<_>>(),
            ["pdf", "style"],
            "{:?}",
            set.bad
        );
        let style = set.get("style").unwrap();
        assert_eq!(style.description, "House style, for every edit.");
        assert_eq!(style.origin, SkillOrigin::Project);
        assert_eq!(set.get("pdf").unwrap().origin, SkillOrigin::Agents);
        assert_eq!(set.shadowed.len(), 1);
        assert_eq!(set.shadowed[0].origin, SkillOrigin::Claude);
        let bad: Vec<String> = set.bad.iter().map(|b| b.to_string()).collect();
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[0].contains("broken/SKILL.md") && bad[0].contains("`description`"));
        assert!(bad[1].contains("noyaml/SKILL.md") && bad[1].contains("`---`"));

        let (found, missing) = set.select(&["pdf".into(), "ghost".into(), "pdf".into()]);
        assert_eq!(found.len(), 1);
        assert_eq!(missing, ["ghost"]);
    }

    #[test]
    fn paths_add_and_ignore_locations() {
        let p = tempfile::tempdir().unwrap();
        let root = p.path();
        let dirs = skill_dirs(
            root,
            None,
            &["docs/skills".into(), "~/shared-skills".into()],
            &[".claude/skills".into()],
            Some(Path::new("/home/u")),
        );
        let paths: Vec<(PathBuf, SkillOrigin)> =
            dirs.into_iter().map(|d| (d.path, d.origin)).collect();
        assert_eq!(
            paths,
            [
                (root.join(".baton/skills"), SkillOrigin::Project),
                (root.join(".agents/skills"), SkillOrigin::Agents),
                (root.join("docs/skills"), SkillOrigin::Config),
                (PathBuf::from("/home/u/shared-skills"), SkillOrigin::Config),
            ]
        );
    }

    #[test]
    fn names_and_descriptions_are_checked() {
        assert!(parse_skill("---\nname: a b\ndescription: x\n---\n")
            .unwrap_err()
            .contains("field `name`"));
        let long = "x".repeat(1025);
        assert!(
            parse_skill(&format!("---\nname: a\ndescription: {long}\n---\n"))
                .unwrap_err()
                .contains("longer than 1024")
        );
        let (n, d) = parse_skill("---\nname: a\ndescription: \"say \\e[31mhi\"\n---\n").unwrap();
        assert_eq!(n, "a");
        assert!(!baton_text::has_controls(&d), "{d:?}");
        assert!(parse_skill("---\nname: a\ndescription: x\n")
            .unwrap_err()
            .contains("not closed"));
    }
}
