//! The workflow memory: three Markdown files under `.baton/memory/` that outlive one workflow.
//!
//! - `activeContext.md` holds what the project is doing now (focus, changes, decisions,
//!   learnings, references, blockers) and the `## Session Settings` a user edits by hand.
//! - `patterns.md` holds rules and pitfalls that hold across workflows.
//! - `progress.md` holds the current workflow, its tasks, the recently completed items and the
//!   verification evidence.
//!
//! The `## ` headings are anchors: code finds its place in a file by them, so they are never
//! renamed. [`MemoryDir::ensure`] makes a missing file from a template, adds any heading a file
//! lacks (just above `## Last Updated`, leaving every existing byte where it was), then reads the
//! files again and fails if a required heading is still absent. [`MemoryDir::finalize`] records
//! what a finished workflow learned. Every write goes to a temp file that is renamed over the
//! old one; a write that fails is an error, and the caller must stop the workflow on it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How many entries `progress.md ## Completed` keeps; older ones are dropped.
pub const COMPLETED_KEPT: usize = 10;

/// The heading every memory file ends with; missing headings are inserted above it.
const LAST_UPDATED: &str = "Last Updated";

/// One of the three memory files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemoryFile {
    ActiveContext,
    Patterns,
    Progress,
}

impl MemoryFile {
    /// All three, in the order they are created and written.
    pub const ALL: [MemoryFile; 3] = [
        MemoryFile::ActiveContext,
        MemoryFile::Patterns,
        MemoryFile::Progress,
    ];

    pub fn file_name(self) -> &'static str {
        match self {
            MemoryFile::ActiveContext => "activeContext.md",
            MemoryFile::Patterns => "patterns.md",
            MemoryFile::Progress => "progress.md",
        }
    }

    /// The `## ` headings the file must have (without the `## `), in template order.
    pub fn required_sections(self) -> &'static [&'static str] {
        match self {
            MemoryFile::ActiveContext => &[
                "Current Focus",
                "Recent Changes",
                "Next Steps",
                "Decisions",
                "Learnings",
                "References",
                "Blockers",
                "Session Settings",
                LAST_UPDATED,
            ],
            MemoryFile::Patterns => &[
                "User Standards",
                "Common Gotchas",
                "Project SKILL_HINTS",
                LAST_UPDATED,
            ],
            MemoryFile::Progress => &[
                "Current Workflow",
                "Tasks",
                "Completed",
                "Verification",
                LAST_UPDATED,
            ],
        }
    }

    /// The text a new file starts with: a title, a note about the headings, every required
    /// section (empty but for Session Settings, whose one setting starts off).
    pub fn template(self) -> String {
        let title = match self {
            MemoryFile::ActiveContext => "Active context",
            MemoryFile::Patterns => "Project patterns",
            MemoryFile::Progress => "Progress",
        };
        let mut text = format!(
            "# {title}\n<!-- baton memory: the ## headings are edit anchors; keep their names. -->\n"
        );
        for name in self.required_sections() {
            text.push_str(&format!("\n## {name}\n"));
            match *name {
                "Session Settings" => text.push_str(
                    "<!-- AUTO_PROCEED: true picks the recommended option at every gate except \
                     a revert or a destructive git step. -->\nAUTO_PROCEED: false\n",
                ),
                LAST_UPDATED => text.push_str("never\n"),
                _ => {}
            }
        }
        text
    }
}

impl std::fmt::Display for MemoryFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.file_name())
    }
}

/// Why a memory operation failed. A `Write` error means the workflow must stop.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("cannot read memory file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "cannot write memory file {path}: {source}; the workflow stops here \
         (fix the file or folder and resume)"
    )]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} has no `## {section}` heading; add the line `## {section}` \
         to the file"
    )]
    MissingSection { path: PathBuf, section: String },
    #[error(
        "{path} line {line}: `{text}` is not a valid setting; {key} takes `true` or `false` \
         (write `{key}: true` or `{key}: false` under ## Session Settings)"
    )]
    BadSetting {
        path: PathBuf,
        line: usize,
        key: &'static str,
        text: String,
    },
}

/// One `## ` section of a memory file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The heading without `## `.
    pub name: String,
    /// Everything after the heading line up to the next `## ` heading, as written.
    pub body: String,
}

/// What `ensure` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnsureReport {
    /// Files made from a template.
    pub created: Vec<MemoryFile>,
    /// Files that lacked headings, with the headings added.
    pub healed: Vec<(MemoryFile, Vec<&'static str>)>,
}

/// How a gate's choice is judged when `AUTO_PROCEED` is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateRisk {
    /// Any gate whose recommended option changes nothing irreversible.
    Ordinary,
    /// Reverting work (the verifier's revert recommendation).
    Revert,
    /// Merging into a base branch, pushing, deleting a branch, discarding a worktree.
    DestructiveGit,
    /// A stop after a failure (failure-stop gate); the user decides how to go on.
    FailureStop,
    /// A plan decision the plan leaves open; BUILD waits for the user's answer.
    OpenPlanDecision,
}

/// The settings under `activeContext.md ## Session Settings`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionSettings {
    /// `AUTO_PROCEED: true`: take the recommended option at gates (see [`Self::auto_takes`]).
    pub auto_proceed: bool,
    /// Other `KEY: value` lines, kept as text (e.g. `DIFF_DRIVEN_DOCS: skip`).
    pub other: BTreeMap<String, String>,
}

impl SessionSettings {
    /// `DIFF_DRIVEN_DOCS: skip`: the project keeps its docs apart; no doc-syncer runs, and the
    /// memory step waits for the verifier directly.
    pub fn skips_doc_sync(&self) -> bool {
        self.other
            .get("DIFF_DRIVEN_DOCS")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("skip"))
    }

    /// Whether a gate of this kind takes its recommended option without asking: only with
    /// `AUTO_PROCEED: true`, and never for a revert, a destructive git step, a failure stop or an
    /// open plan decision (cc10x's trust rule). The choice is to be logged under
    /// `activeContext.md ## Decisions` ([`MemoryDir::append`]).
    pub fn auto_takes(&self, risk: GateRisk) -> bool {
        self.auto_proceed && risk == GateRisk::Ordinary
    }
}

/// What a finished workflow leaves in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finalization {
    /// The workflow's id; its `memory_task_id` line in `## References` is removed.
    pub workflow_id: String,
    /// Written to `## Last Updated` of every file.
    pub updated_at: time::OffsetDateTime,
    /// → `activeContext.md ## Learnings`.
    pub learnings: Vec<String>,
    /// → `patterns.md ## Common Gotchas`.
    pub gotchas: Vec<String>,
    /// → `progress.md ## Verification` (command and result).
    pub verification: Vec<String>,
    /// → `patterns.md ## Common Gotchas`, each as `[Deferred]: …`.
    pub deferred: Vec<String>,
    /// → `progress.md ## Completed` as `[x] …`; the list keeps the last [`COMPLETED_KEPT`].
    pub completed_item: Option<String>,
    /// When given, replaces the body of `progress.md ## Tasks` (the workflow's task snapshot).
    pub tasks: Option<Vec<String>>,
    /// → `activeContext.md ## Recent Changes` (PLAN: `Plan saved: …`; DEBUG: the reset marker
    /// and the result).
    pub recent_changes: Vec<String>,
    /// When given, replaces the body of `activeContext.md ## Next Steps`.
    pub next_steps: Option<Vec<String>>,
    /// `activeContext.md ## References` lines `- {key}: {value}`, each replacing the line of the
    /// same key (PLAN: `Plan`).
    pub references: Vec<(String, String)>,
}

impl Finalization {
    pub fn new(workflow_id: impl Into<String>, updated_at: time::OffsetDateTime) -> Finalization {
        Finalization {
            workflow_id: workflow_id.into(),
            updated_at,
            learnings: Vec::new(),
            gotchas: Vec::new(),
            verification: Vec::new(),
            deferred: Vec::new(),
            completed_item: None,
            tasks: None,
            recent_changes: Vec::new(),
            next_steps: None,
            references: Vec::new(),
        }
    }
}

/// The memory folder of one project.
#[derive(Clone, Debug)]
pub struct MemoryDir {
    dir: PathBuf,
}

impl MemoryDir {
    /// `<project_root>/.baton/memory/`. Nothing is touched until [`Self::ensure`].
    pub fn new(project_root: &Path) -> MemoryDir {
        MemoryDir {
            dir: project_root.join(".baton").join("memory"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, file: MemoryFile) -> PathBuf {
        self.dir.join(file.file_name())
    }

    /// Creates missing files from their templates, adds missing headings to existing files, then
    /// reads all three again and checks every required heading is there.
    pub fn ensure(&self) -> Result<EnsureReport, MemoryError> {
        baton_state::create_own_dir(&self.dir).map_err(|source| MemoryError::Write {
            path: self.dir.clone(),
            source,
        })?;
        let mut report = EnsureReport::default();
        for file in MemoryFile::ALL {
            let path = self.path(file);
            match read_text(&path)? {
                None => {
                    write_atomic(&path, &file.template())?;
                    report.created.push(file);
                }
                Some(text) => {
                    let (healed, added) = heal(file, &text);
                    if !added.is_empty() {
                        write_atomic(&path, &healed)?;
                        report.healed.push((file, added));
                    }
                }
            }
        }
        for file in MemoryFile::ALL {
            self.verify(file)?;
        }
        Ok(report)
    }

    /// The file's text; an error if it does not exist.
    pub fn read(&self, file: MemoryFile) -> Result<String, MemoryError> {
        let path = self.path(file);
        read_text(&path)?.ok_or_else(|| MemoryError::Read {
            path,
            source: std::io::ErrorKind::NotFound.into(),
        })
    }

    /// The file's `## ` sections in order (text above the first one is not a section).
    pub fn sections(&self, file: MemoryFile) -> Result<Vec<Section>, MemoryError> {
        Ok(parse_sections(&self.read(file)?))
    }

    /// The settings under `activeContext.md ## Session Settings`. `AUTO_PROCEED` is off when the
    /// line is absent; a value other than `true` or `false` is an error naming the line.
    /// The value of `activeContext.md ## References` line `- KEY: value` (backticks dropped);
    /// `None` when the file, the section or the line is missing, or the value is `N/A`.
    pub fn reference(&self, key: &str) -> Result<Option<String>, MemoryError> {
        let Some(text) = read_text(&self.path(MemoryFile::ActiveContext))? else {
            return Ok(None);
        };
        let Some((_, start, end)) = section_span(&text, "References") else {
            return Ok(None);
        };
        Ok(text[start..end].lines().find_map(|raw| {
            let line = raw.trim();
            let line = line.strip_prefix("- ").unwrap_or(line);
            let (k, v) = line.split_once(':')?;
            let v = v.trim().trim_matches('`').trim();
            (k.trim().eq_ignore_ascii_case(key) && !v.is_empty() && !v.eq_ignore_ascii_case("n/a"))
                .then(|| v.to_string())
        }))
    }

    pub fn session_settings(&self) -> Result<SessionSettings, MemoryError> {
        let path = self.path(MemoryFile::ActiveContext);
        parse_settings(&path, &self.read(MemoryFile::ActiveContext)?)
    }

    /// Appends one `- ` entry per item under `## section` of `file` (for example a gate choice
    /// made under `AUTO_PROCEED`, logged in `activeContext.md ## Decisions`).
    pub fn append(
        &self,
        file: MemoryFile,
        section: &str,
        entries: &[String],
    ) -> Result<(), MemoryError> {
        let path = self.path(file);
        let text = self.read(file)?;
        let lines: Vec<String> = entries.iter().map(|e| bullet("", e)).collect();
        let new = edit_section(&text, section, |body| append_lines(body, &lines))
            .ok_or_else(|| missing(&path, section))?;
        write_atomic(&path, &new)?;
        self.verify(file)
    }

    /// Records a finished workflow: learnings, gotchas and deferred items, verification
    /// evidence, the completed item (the list trimmed to the last [`COMPLETED_KEPT`]), the task
    /// snapshot, the removal of the workflow's `memory_task_id` reference, and `## Last Updated`
    /// of each file. Heals the files first. The three new texts are all written to temp files
    /// before any is renamed into place, so a failure while writing leaves the old files as
    /// they were. Any error means the workflow stops.
    pub fn finalize(&self, fin: &Finalization) -> Result<(), MemoryError> {
        self.ensure()?;
        // Finalizing twice (a crash after the files were written, before the caller recorded
        // it) must not add the workflow's lines again: its completed item marks it done.
        if let Some(item) = &fin.completed_item {
            let done = bullet("[x] ", item);
            let progress = self.read(MemoryFile::Progress)?;
            if progress.lines().any(|l| l.trim_end() == done.trim_end()) {
                return Ok(());
            }
        }
        let stamp = fin
            .updated_at
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let mut staged: Vec<(PathBuf, PathBuf, String)> = Vec::new();
        for file in MemoryFile::ALL {
            let path = self.path(file);
            let mut text = self.read(file)?;
            for (section, edit) in finalize_edits(file, fin) {
                text = edit_section(&text, section, |body| edit(body))
                    .ok_or_else(|| missing(&path, section))?;
            }
            text = edit_section(&text, LAST_UPDATED, |body| {
                replace_body(body, std::slice::from_ref(&stamp))
            })
            .ok_or_else(|| missing(&path, LAST_UPDATED))?;
            match stage(&path, &text) {
                Ok(tmp) => staged.push((tmp, path, text)),
                Err(e) => {
                    for (tmp, _, _) in &staged {
                        let _ = std::fs::remove_file(tmp);
                    }
                    return Err(e);
                }
            }
        }
        for (tmp, path, _) in &staged {
            commit(tmp, path)?;
        }
        for (_, path, text) in &staged {
            match read_text(path)? {
                Some(back) if back == *text => {}
                _ => {
                    return Err(MemoryError::Write {
                        path: path.clone(),
                        source: std::io::Error::other("the file read back differs from the write"),
                    })
                }
            }
        }
        Ok(())
    }

    /// Reads the file and checks that every required heading is there.
    fn verify(&self, file: MemoryFile) -> Result<(), MemoryError> {
        let text = self.read(file)?;
        let names = heading_names(&text);
        for section in file.required_sections() {
            if !names.iter().any(|n| n == section) {
                return Err(missing(&self.path(file), section));
            }
        }
        Ok(())
    }
}

type BodyEdit<'a> = Box<dyn Fn(&str) -> String + 'a>;

/// The section edits finalization makes in one file (apart from `## Last Updated`).
fn finalize_edits<'a>(
    file: MemoryFile,
    fin: &'a Finalization,
) -> Vec<(&'static str, BodyEdit<'a>)> {
    let bullets = |prefix: &'static str, items: &'a [String]| -> Vec<String> {
        items.iter().map(|i| bullet(prefix, i)).collect()
    };
    match file {
        MemoryFile::ActiveContext => {
            let learnings = bullets("", &fin.learnings);
            let recent = bullets("", &fin.recent_changes);
            let wf = format!("wf:{}", fin.workflow_id);
            let refs: Vec<(String, String)> = fin
                .references
                .iter()
                .map(|(k, v)| (format!("- {k}:"), bullet("", &format!("{k}: {v}"))))
                .collect();
            let mut edits: Vec<(&'static str, BodyEdit<'a>)> = vec![
                ("Learnings", Box::new(move |b| append_lines(b, &learnings))),
                (
                    "Recent Changes",
                    Box::new(move |b| append_lines(b, &recent)),
                ),
                (
                    "References",
                    Box::new(move |b| {
                        let kept = drop_lines(b, |l| {
                            (l.contains("memory_task_id") && has_token(l, &wf))
                                || refs
                                    .iter()
                                    .any(|(key, _)| l.trim_start().starts_with(key.as_str()))
                        });
                        let new: Vec<String> = refs.iter().map(|(_, line)| line.clone()).collect();
                        append_lines(&kept, &new)
                    }),
                ),
            ];
            if let Some(steps) = &fin.next_steps {
                let lines: Vec<String> = steps.clone();
                edits.push(("Next Steps", Box::new(move |b| replace_body(b, &lines))));
            }
            edits
        }
        MemoryFile::Patterns => {
            let mut lines = bullets("", &fin.gotchas);
            lines.extend(bullets("[Deferred]: ", &fin.deferred));
            vec![("Common Gotchas", Box::new(move |b| append_lines(b, &lines)))]
        }
        MemoryFile::Progress => {
            let mut edits: Vec<(&'static str, BodyEdit<'a>)> = Vec::new();
            if let Some(tasks) = &fin.tasks {
                let lines = bullets("", tasks);
                edits.push(("Tasks", Box::new(move |b| replace_body(b, &lines))));
            }
            let done: Vec<String> = fin
                .completed_item
                .iter()
                .map(|i| bullet("[x] ", i))
                .collect();
            edits.push((
                "Completed",
                Box::new(move |b| keep_last_items(&append_lines(b, &done), COMPLETED_KEPT)),
            ));
            let evidence = bullets("", &fin.verification);
            edits.push((
                "Verification",
                Box::new(move |b| append_lines(b, &evidence)),
            ));
            edits
        }
    }
}

fn missing(path: &Path, section: &str) -> MemoryError {
    MemoryError::MissingSection {
        path: path.to_path_buf(),
        section: section.to_string(),
    }
}

/// `- {prefix}{text}` with line breaks in `text` folded to spaces, so an entry stays one line.
fn bullet(prefix: &str, text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("- {prefix}{one_line}")
}

/// Whether `line` contains `token` as a whole word (so `wf:a` does not match `wf:ab`).
fn has_token(line: &str, token: &str) -> bool {
    line.split(|c: char| c.is_whitespace() || c == '`')
        .any(|w| w == token)
}

/// The name of a `## ` heading line, if it is one.
fn heading_name(line: &str) -> Option<&str> {
    line.trim_end()
        .strip_prefix("## ")
        .map(str::trim)
        .filter(|n| !n.is_empty())
}

fn heading_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(heading_name)
        .map(str::to_string)
        .collect()
}

/// The `## ` sections of `text`, each body as written (line endings included).
pub fn parse_sections(text: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(name) = heading_name(line) {
            out.push(Section {
                name: name.to_string(),
                body: String::new(),
            });
        } else if let Some(last) = out.last_mut() {
            last.body.push_str(line);
        }
    }
    out
}

/// Byte ranges of the section named `name`: (heading start, body start, body end).
fn section_span(text: &str, name: &str) -> Option<(usize, usize, usize)> {
    let mut offset = 0;
    let mut found: Option<(usize, usize)> = None;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        match (heading_name(line), found) {
            (Some(_), Some((h, b))) => return Some((h, b, start)),
            (Some(n), None) if n == name => found = Some((start, offset)),
            _ => {}
        }
    }
    found.map(|(h, b)| (h, b, text.len()))
}

/// `text` with the body of section `name` replaced by `edit(body)`; `None` without the section.
fn edit_section(text: &str, name: &str, edit: impl FnOnce(&str) -> String) -> Option<String> {
    let (_, body_start, body_end) = section_span(text, name)?;
    let mut out = String::with_capacity(text.len() + 64);
    out.push_str(&text[..body_start]);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&edit(&text[body_start..body_end]));
    out.push_str(&text[body_end..]);
    Some(out)
}

/// Splits a body into its content and the blank lines that end it.
fn split_trailing_blank(body: &str) -> (&str, &str) {
    let mut cut = body.len();
    for line in body.split_inclusive('\n').rev() {
        if line.trim().is_empty() {
            cut -= line.len();
        } else {
            break;
        }
    }
    body.split_at(cut)
}

/// The body with `lines` added after its last non-blank line, keeping the blank lines that
/// separate it from the next heading.
fn append_lines(body: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return body.to_string();
    }
    let (content, tail) = split_trailing_blank(body);
    let mut out = content.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(if tail.is_empty() { "\n" } else { tail });
    out
}

/// A body holding just `lines`, followed by a blank line.
fn replace_body(_body: &str, lines: &[String]) -> String {
    let mut out = String::new();
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push('\n');
    out
}

fn drop_lines(body: &str, drop: impl Fn(&str) -> bool) -> String {
    body.split_inclusive('\n').filter(|l| !drop(l)).collect()
}

/// The body with only its last `keep` `- ` items; an item's indented continuation lines go with
/// it, and lines that belong to no item stay.
fn keep_last_items(body: &str, keep: usize) -> String {
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    // The item each line belongs to, if any.
    let mut owner: Vec<Option<usize>> = Vec::with_capacity(lines.len());
    let mut items = 0;
    let mut current: Option<usize> = None;
    for line in &lines {
        if line.starts_with("- ") || line.starts_with("* ") {
            current = Some(items);
            items += 1;
        } else if !(line.starts_with(' ') || line.starts_with('\t')) || line.trim().is_empty() {
            current = None;
        }
        owner.push(current);
    }
    let first_kept = items.saturating_sub(keep);
    lines
        .iter()
        .zip(owner)
        .filter(|(_, o)| o.is_none_or(|i| i >= first_kept))
        .map(|(l, _)| *l)
        .collect()
}

/// Adds the required headings `text` lacks, each as an empty section just above
/// `## Last Updated` (at the end when that heading is missing too). Existing text is kept byte
/// for byte; nothing moves. Returns the new text and the headings added.
fn heal(file: MemoryFile, text: &str) -> (String, Vec<&'static str>) {
    let names = heading_names(text);
    let absent: Vec<&'static str> = file
        .required_sections()
        .iter()
        .copied()
        .filter(|s| !names.iter().any(|n| n == s))
        .collect();
    if absent.is_empty() {
        return (text.to_string(), absent);
    }
    let block =
        |names: &[&str]| -> String { names.iter().map(|n| format!("## {n}\n\n")).collect() };
    let out = match section_span(text, LAST_UPDATED) {
        Some((at, _, _)) => {
            let mut out = text[..at].to_string();
            // The heading above which the block goes starts a line, so `out` ends with `\n` or
            // is empty.
            out.push_str(&block(&absent));
            out.push_str(&text[at..]);
            out
        }
        None => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push('\n');
            }
            let (before, last) = absent.split_at(absent.len() - 1);
            out.push_str(&block(before));
            // `Last Updated` is always the final required heading.
            out.push_str(&format!("## {}\n", last[0]));
            out
        }
    };
    (out, absent)
}

/// Reads the `## Session Settings` section: `KEY: value` lines, with `#` and `<!--` lines
/// treated as comments and a leading `- ` allowed.
fn parse_settings(path: &Path, text: &str) -> Result<SessionSettings, MemoryError> {
    let mut settings = SessionSettings::default();
    let Some((_, body_start, body_end)) = section_span(text, "Session Settings") else {
        return Ok(settings);
    };
    let first_line = text[..body_start].matches('\n').count() + 1;
    for (i, raw) in text[body_start..body_end].lines().enumerate() {
        let line = raw.trim();
        let line = line.strip_prefix("- ").unwrap_or(line).trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("<!--") {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "AUTO_PROCEED" {
            settings.auto_proceed = match value.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(MemoryError::BadSetting {
                        path: path.to_path_buf(),
                        line: first_line + i,
                        key: "AUTO_PROCEED",
                        text: raw.trim().to_string(),
                    })
                }
            };
        } else {
            settings.other.insert(key.to_string(), value.to_string());
        }
    }
    Ok(settings)
}

/// The file's text, `None` when it does not exist.
fn read_text(path: &Path) -> Result<Option<String>, MemoryError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(MemoryError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> MemoryError + '_ {
    move |source| MemoryError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `text` to a temp file beside `path` and fsyncs it; returns the temp path.
fn stage(path: &Path, text: &str) -> Result<PathBuf, MemoryError> {
    baton_state::stage_file(path, text.as_bytes()).map_err(write_err(path))
}

/// Renames a staged temp file over `path` and makes the rename durable.
fn commit(tmp: &Path, path: &Path) -> Result<(), MemoryError> {
    baton_state::commit_file(tmp, path).map_err(write_err(path))
}

/// Replaces `path` with `text` so a reader sees the old file or the new one, never a mix.
fn write_atomic(path: &Path, text: &str) -> Result<(), MemoryError> {
    let tmp = stage(path, text)?;
    commit(&tmp, path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use pretty_assertions::assert_eq;

    use super::*;

    fn memory() -> (tempfile::TempDir, MemoryDir) {
        let root = tempfile::tempdir().unwrap();
        let mem = MemoryDir::new(root.path());
        (root, mem)
    }

    fn at() -> time::OffsetDateTime {
        time::macros::datetime!(2026-12-03 14:00:00 UTC)
    }

    fn names(mem: &MemoryDir, file: MemoryFile) -> Vec<String> {
        mem.sections(file)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect()
    }

    fn body(mem: &MemoryDir, file: MemoryFile, name: &str) -> String {
        mem.sections(file)
            .unwrap()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
            .body
    }

    fn set_settings(mem: &MemoryDir, settings: &str) {
        let path = mem.path(MemoryFile::ActiveContext);
        let text = std::fs::read_to_string(&path).unwrap();
        let text = edit_section(&text, "Session Settings", |_| settings.to_string()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn ensure_creates_all_three_files_with_every_required_section() {
        let (root, mem) = memory();
        let report = mem.ensure().unwrap();
        assert_eq!(report.created, MemoryFile::ALL.to_vec());
        assert!(report.healed.is_empty());
        assert_eq!(mem.dir(), root.path().join(".baton/memory"));
        for file in MemoryFile::ALL {
            let want: Vec<String> = file
                .required_sections()
                .iter()
                .map(|s| s.to_string())
                .collect();
            assert_eq!(names(&mem, file), want, "{file}");
        }
        assert_eq!(
            names(&mem, MemoryFile::ActiveContext),
            [
                "Current Focus",
                "Recent Changes",
                "Next Steps",
                "Decisions",
                "Learnings",
                "References",
                "Blockers",
                "Session Settings",
                "Last Updated"
            ]
        );
        // A second run changes nothing.
        let before = mem.read(MemoryFile::Progress).unwrap();
        assert_eq!(mem.ensure().unwrap(), EnsureReport::default());
        assert_eq!(mem.read(MemoryFile::Progress).unwrap(), before);
        assert!(!mem.session_settings().unwrap().auto_proceed);
    }

    #[test]
    fn healing_inserts_missing_headings_above_last_updated_and_keeps_every_byte() {
        let (_root, mem) = memory();
        std::fs::create_dir_all(mem.dir()).unwrap();
        // No `## Tasks`, no `## Verification`; odd spacing and trailing spaces kept as written.
        let before = "# My progress  \n\nfree text\n\n## Current Workflow\nBUILD\n\n## Completed\n- [x] one   \n\n\n## Last Updated\nyesterday";
        std::fs::write(mem.path(MemoryFile::Progress), before).unwrap();
        let report = mem.ensure().unwrap();
        assert_eq!(
            report.healed,
            vec![(MemoryFile::Progress, vec!["Tasks", "Verification"])]
        );
        let after = mem.read(MemoryFile::Progress).unwrap();
        let inserted = "## Tasks\n\n## Verification\n\n";
        let at = before.find("## Last Updated").unwrap();
        assert_eq!(
            after,
            format!("{}{inserted}{}", &before[..at], &before[at..])
        );
        assert_eq!(after.replacen(inserted, "", 1), before);
    }

    #[test]
    fn healing_without_last_updated_appends_at_the_end() {
        let (_root, mem) = memory();
        std::fs::create_dir_all(mem.dir()).unwrap();
        let before = "## User Standards\n- tabs\n## Common Gotchas\n- none";
        std::fs::write(mem.path(MemoryFile::Patterns), before).unwrap();
        mem.ensure().unwrap();
        let after = mem.read(MemoryFile::Patterns).unwrap();
        assert!(after.starts_with(before));
        assert_eq!(
            &after[before.len()..],
            "\n\n## Project SKILL_HINTS\n\n## Last Updated\n"
        );
    }

    #[test]
    fn auto_proceed_true_false_absent_and_garbage() {
        let (_root, mem) = memory();
        mem.ensure().unwrap();

        set_settings(&mem, "AUTO_PROCEED: true\nDIFF_DRIVEN_DOCS: skip\n\n");
        let s = mem.session_settings().unwrap();
        assert!(s.auto_proceed);
        assert_eq!(
            s.other.get("DIFF_DRIVEN_DOCS").map(String::as_str),
            Some("skip")
        );
        assert!(s.auto_takes(GateRisk::Ordinary));
        assert!(!s.auto_takes(GateRisk::Revert));
        assert!(!s.auto_takes(GateRisk::DestructiveGit));
        assert!(!s.auto_takes(GateRisk::FailureStop));
        assert!(!s.auto_takes(GateRisk::OpenPlanDecision));

        set_settings(&mem, "- AUTO_PROCEED: false\n\n");
        let s = mem.session_settings().unwrap();
        assert!(!s.auto_proceed);
        assert!(!s.auto_takes(GateRisk::Ordinary));

        // Absent, or only commented out: off.
        set_settings(&mem, "# AUTO_PROCEED: true\n\n");
        assert_eq!(mem.session_settings().unwrap(), SessionSettings::default());
        set_settings(&mem, "\n");
        assert!(!mem.session_settings().unwrap().auto_proceed);

        set_settings(&mem, "\nAUTO_PROCEED: yes please\n\n");
        let err = mem.session_settings().unwrap_err();
        let text = mem.read(MemoryFile::ActiveContext).unwrap();
        let line = text
            .lines()
            .position(|l| l == "AUTO_PROCEED: yes please")
            .unwrap()
            + 1;
        match &err {
            MemoryError::BadSetting { line: l, text, .. } => {
                assert_eq!(*l, line);
                assert_eq!(text, "AUTO_PROCEED: yes please");
            }
            other => panic!("{other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&format!("line {line}")), "{msg}");
        assert!(
            msg.contains("`AUTO_PROCEED: true` or `AUTO_PROCEED: false`"),
            "{msg}"
        );
    }

    #[test]
    fn finalize_writes_entries_and_keeps_the_last_ten_completed_items() {
        let (_root, mem) = memory();
        mem.ensure().unwrap();
        mem.append(
            MemoryFile::ActiveContext,
            "References",
            &[
                "[cc10x-internal] memory_task_id: 7 wf:wf-1".to_string(),
                "[cc10x-internal] memory_task_id: 8 wf:wf-10".to_string(),
            ],
        )
        .unwrap();
        for n in 1..=12 {
            let mut fin = Finalization::new("wf-1", at());
            fin.completed_item = Some(format!("item {n} - evidence"));
            if n == 12 {
                fin.learnings = vec!["retries need jitter".into()];
                fin.gotchas = vec!["the banner caches: clear it on retry".into()];
                fin.deferred = vec!["rename the retry module".into()];
                fin.verification = vec!["`cargo test` -> exit 0".into()];
                fin.tasks = Some(vec!["[x] fix banner".into()]);
            }
            mem.finalize(&fin).unwrap();
        }
        let completed = body(&mem, MemoryFile::Progress, "Completed");
        let items: Vec<&str> = completed.lines().filter(|l| l.starts_with("- ")).collect();
        let want: Vec<String> = (3..=12)
            .map(|n| format!("- [x] item {n} - evidence"))
            .collect();
        assert_eq!(items, want);

        for (file, section, want) in [
            (
                MemoryFile::ActiveContext,
                "Learnings",
                "- retries need jitter\n\n",
            ),
            (
                MemoryFile::Patterns,
                "Common Gotchas",
                "- the banner caches: clear it on retry\n- [Deferred]: rename the retry module\n\n",
            ),
            (
                MemoryFile::Progress,
                "Verification",
                "- `cargo test` -> exit 0\n\n",
            ),
            (MemoryFile::Progress, "Tasks", "- [x] fix banner\n\n"),
            // Only this workflow's memory_task_id line is gone.
            (
                MemoryFile::ActiveContext,
                "References",
                "- [cc10x-internal] memory_task_id: 8 wf:wf-10\n\n",
            ),
        ] {
            assert_eq!(body(&mem, file, section), want, "{file} {section}");
        }
        for file in MemoryFile::ALL {
            assert_eq!(body(&mem, file, "Last Updated"), "2026-12-03T14:00:00Z\n\n");
            assert!(!mem.dir().join(format!(".{file}.tmp")).exists());
        }
    }

    #[test]
    fn trimming_keeps_prose_and_continuation_lines_with_their_items() {
        let body = "kept prose\n- a\n  more a\n- b\n- c\n  more c\n\n";
        assert_eq!(
            keep_last_items(body, 2),
            "kept prose\n- b\n- c\n  more c\n\n"
        );
        assert_eq!(keep_last_items(body, 10), body);
    }

    #[test]
    fn a_memory_folder_that_cannot_be_made_is_an_error() {
        let root = tempfile::tempdir().unwrap();
        // `.baton` is a regular file, so `.baton/memory` cannot be created, even as root.
        std::fs::write(root.path().join(".baton"), "not a folder").unwrap();
        let mem = MemoryDir::new(root.path());
        let err = mem.ensure().unwrap_err();
        assert!(matches!(err, MemoryError::Write { .. }), "{err:?}");
        assert!(err.to_string().contains("the workflow stops"), "{err}");
        let err = mem.finalize(&Finalization::new("wf-1", at())).unwrap_err();
        assert!(matches!(err, MemoryError::Write { .. }), "{err:?}");
    }

    #[test]
    fn a_failed_finalize_write_changes_no_file() {
        let (_root, mem) = memory();
        mem.ensure().unwrap();
        let before: Vec<String> = MemoryFile::ALL
            .iter()
            .map(|f| mem.read(*f).unwrap())
            .collect();
        // A folder where progress.md's temp file goes: creating the temp file fails, even as
        // root, after the other two files were staged.
        std::fs::create_dir(mem.dir().join(".progress.md.tmp")).unwrap();
        let mut fin = Finalization::new("wf-1", at());
        fin.learnings = vec!["never written".into()];
        fin.completed_item = Some("never written".into());
        let err = mem.finalize(&fin).unwrap_err();
        match &err {
            MemoryError::Write { path, .. } => assert_eq!(path, &mem.path(MemoryFile::Progress)),
            other => panic!("{other:?}"),
        }
        let after: Vec<String> = MemoryFile::ALL
            .iter()
            .map(|f| mem.read(*f).unwrap())
            .collect();
        assert_eq!(after, before);
        assert!(!mem.dir().join(".activeContext.md.tmp").exists());
        assert!(!mem.dir().join(".patterns.md.tmp").exists());
    }

    #[test]
    fn a_file_whose_heading_is_missing_after_healing_is_named() {
        let (_root, mem) = memory();
        mem.ensure().unwrap();
        let path = mem.path(MemoryFile::Patterns);
        std::fs::write(&path, "## User Standards\n").unwrap();
        // verify() alone (no healing) reports the first absent heading with its file.
        let err = mem.verify(MemoryFile::Patterns).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("patterns.md"), "{msg}");
        assert!(msg.contains("## Common Gotchas"), "{msg}");
        // ensure() heals it.
        mem.ensure().unwrap();
    }

    #[test]
    fn finalizing_the_same_workflow_twice_adds_nothing_the_second_time() {
        let (_root, mem) = memory();
        let mut fin = Finalization::new(
            "wf-20261203T150000Z-0a1b2c3d",
            time::OffsetDateTime::UNIX_EPOCH,
        );
        fin.completed_item =
            Some("BUILD wf-20261203T150000Z-0a1b2c3d: add a flag (verified)".into());
        fin.verification = vec!["tests: `sh test.sh` → exit 0 (PASS)".into()];
        mem.finalize(&fin).unwrap();
        let once = std::fs::read_to_string(mem.path(MemoryFile::Progress)).unwrap();
        mem.finalize(&fin).unwrap();
        let twice = std::fs::read_to_string(mem.path(MemoryFile::Progress)).unwrap();
        assert_eq!(once, twice);
        assert_eq!(twice.matches("add a flag (verified)").count(), 1);
    }
}
