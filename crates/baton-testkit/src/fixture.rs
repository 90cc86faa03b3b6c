//! Fixtures for tests that run real processes: a temp directory with an isolated environment
//! (its own HOME, XDG_CONFIG_HOME, XDG_STATE_HOME, a git identity and no system or global git
//! config), a working directory that may be made a git repository, a way to run the built `baton`
//! binary in that environment, and [`wait_until`] for state another process produces.
//!
//! ```no_run
//! use baton_testkit::fixture::Sandbox;
//!
//! // In a test of baton-cli, where cargo names the binary.
//! let sb = Sandbox::new().baton_exe("/path/to/baton").env("BATON_MAX_SUBAGENTS", "1");
//! sb.init_repo("main");
//! sb.write("README", "hello\n");
//! sb.commit_all("initial");
//! let out = sb.run(&["flow", "status"]);
//! assert_eq!(sb.subjects("main"), ["initial"]);
//! # let _ = out;
//! ```
//!
//! Every command the sandbox builds ([`Sandbox::command`], [`Sandbox::baton`], [`Sandbox::git`])
//! starts from an empty environment: `PATH` from the test process, then [`Sandbox::isolated_env`],
//! then the variables added with [`Sandbox::env`], in the working directory.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The git identity and config isolation every sandbox command gets, also usable on its own
/// (for example as the git environment of an in-process run).
pub const GIT_ENV: [(&str, &str); 6] = [
    ("GIT_AUTHOR_NAME", "Baton Test"),
    ("GIT_AUTHOR_EMAIL", "test@example.invalid"),
    ("GIT_COMMITTER_NAME", "Baton Test"),
    ("GIT_COMMITTER_EMAIL", "test@example.invalid"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
];

/// Polls `f` every 20 ms until it holds or `deadline` passes; returns its last answer. For
/// waiting on an observable state (a file, a process gone, a status another process reports),
/// never as a delay.
pub fn wait_until(deadline: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// The workspace root (two levels above this crate), where `bench/` installs the peer agents.
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    root.canonicalize().unwrap_or(root)
}

/// A program a live test needs: the file the environment variable `var` names, else
/// `fallback` under the workspace root (e.g. `bench/node_modules/.bin/codex`).
pub fn find_program(var: &str, fallback: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let p = workspace_root().join(fallback);
    p.is_file().then_some(p)
}

/// Whether this run is CI (`CI` set to anything but empty, `0` or `false`, as `.ci/run` does).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// What a live test does when its program is missing: outside CI it prints a note and the test
/// passes; in CI it panics, so a broken install step cannot turn the live tests off unnoticed.
#[track_caller]
pub fn skip_live(name: &str, var: &str, hint: &str) {
    let message = format!("the live {name} test cannot run: {name} not found; set {var} or {hint}");
    if in_ci() {
        panic!("{message} (CI is set, so a missing peer is a failure)");
    }
    eprintln!("note: skipped: {message}");
}

/// Asserts that a finished process exited with `code`, showing its stderr and stdout if not.
#[track_caller]
pub fn assert_exit(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stderr:\n{}\nstdout:\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Every file under `dir`, relative to it, sorted (to show that a command wrote nothing, or
/// only what it should). Panics on a folder that cannot be read.
#[track_caller]
pub fn files_under(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else if let Ok(rel) = path.strip_prefix(base) {
                out.push(rel.display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The JSON lines a process printed on stdout (blank lines skipped); panics on a line that is not JSON.
#[track_caller]
pub fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The report of a `baton task --json` run (or `task wait --json`): the `report` of the last
/// `{"type":"report"}` line on stdout; panics, showing stdout, when there is none.
#[track_caller]
pub fn task_report(out: &std::process::Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("\"type\":\"report\""))
        .unwrap_or_else(|| panic!("no report in {text}"));
    let value: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    value["report"].clone()
}

/// A temp directory laid out as `home/`, `config/` (XDG_CONFIG_HOME), `state/`
/// (XDG_STATE_HOME) and `work/` (the working directory of every command). Removed when dropped.
pub struct Sandbox {
    tmp: TempDir,
    baton: Option<PathBuf>,
    extra: Vec<(OsString, OsString)>,
    untrusted: bool,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("root", &self.root())
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Creates the directories; the working directory is not a git repository yet (see
    /// [`init_repo`](Self::init_repo)).
    pub fn new() -> Sandbox {
        let tmp = TempDir::new().unwrap_or_else(|e| panic!("baton-testkit: no temp dir: {e}"));
        Sandbox::with_dir(tmp)
    }

    /// Like [`new`](Self::new), in a temp directory under `dir` when one can be made there
    /// (a test that runs many short workflows puts them on a memory file system), else in the
    /// usual temp folder.
    pub fn new_in(dir: &Path) -> Sandbox {
        match TempDir::new_in(dir) {
            Ok(tmp) => Sandbox::with_dir(tmp),
            Err(_) => Sandbox::new(),
        }
    }

    fn with_dir(tmp: TempDir) -> Sandbox {
        let sb = Sandbox {
            tmp,
            baton: None,
            extra: Vec::new(),
            untrusted: false,
        };
        for dir in [sb.home(), sb.config_home(), sb.state_home(), sb.work()] {
            create_dir(&dir);
        }
        sb
    }

    /// The `baton` binary [`baton`](Self::baton) and [`run`](Self::run) start (a test of
    /// baton-cli passes `env!("CARGO_BIN_EXE_baton")`).
    pub fn baton_exe(mut self, exe: impl Into<PathBuf>) -> Self {
        self.baton = Some(exe.into());
        self
    }

    /// One more variable for every command, after the isolated ones (so it may replace one).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.extra
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Writes `toml` to `baton.toml` in the temp directory ([`config_file`](Self::config_file))
    /// and points `BATON_CONFIG` at it.
    pub fn baton_config(self, toml: &str) -> Self {
        let file = self.config_file();
        std::fs::write(&file, toml)
            .unwrap_or_else(|e| panic!("baton-testkit: cannot write {}: {e}", file.display()));
        self.env("BATON_CONFIG", file)
    }

    /// A config whose provider `mock` speaks wire format `kind` (`openai`, `openai-responses`,
    /// `anthropic`) to `server`, with its key in `MOCK_API_KEY` (set to `test-key`), then
    /// `extra` (more TOML).
    pub fn mock_provider(self, server: &crate::MockServer, kind: &str, extra: &str) -> Self {
        let base = match kind {
            "anthropic" => server.url(),
            _ => format!("{}/v1", server.url()),
        };
        self.baton_config(&format!(
            "[providers.mock]\nkind = \"{kind}\"\nbase_url = \"{base}\"\napi_key_env = \"MOCK_API_KEY\"\n{extra}"
        ))
        .env("MOCK_API_KEY", "test-key")
    }

    /// `baton.toml` in the temp directory (see [`baton_config`](Self::baton_config)).
    pub fn config_file(&self) -> PathBuf {
        self.path("baton.toml")
    }

    /// The temp directory itself.
    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// `rel` below the temp directory (outside the working directory).
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root().join(rel)
    }

    pub fn home(&self) -> PathBuf {
        self.path("home")
    }

    /// XDG_CONFIG_HOME.
    pub fn config_home(&self) -> PathBuf {
        self.path("config")
    }

    /// XDG_STATE_HOME.
    pub fn state_home(&self) -> PathBuf {
        self.path("state")
    }

    /// The working directory of every command (the repository, after
    /// [`init_repo`](Self::init_repo)).
    pub fn work(&self) -> PathBuf {
        self.path("work")
    }

    /// HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and [`GIT_ENV`].
    pub fn isolated_env(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = vec![
            ("HOME".into(), self.home().into()),
            ("XDG_CONFIG_HOME".into(), self.config_home().into()),
            ("XDG_STATE_HOME".into(), self.state_home().into()),
        ];
        env.extend(GIT_ENV.iter().map(|(k, v)| ((*k).into(), (*v).into())));
        env
    }

    /// `program` with the sandbox's environment, in the working directory.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(self.isolated_env())
            .envs(self.extra.iter().map(|(k, v)| (k, v)))
            .current_dir(self.work());
        cmd
    }

    /// The `baton` binary given to [`baton_exe`](Self::baton_exe) with `args`.
    pub fn baton(&self, args: &[&str]) -> Command {
        let exe = self
            .baton
            .as_ref()
            .unwrap_or_else(|| panic!("baton-testkit: Sandbox::baton_exe was not given"));
        let mut cmd = self.command(exe);
        cmd.args(args);
        cmd
    }

    /// Runs `baton args` to its end with stdin closed.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// Like [`run`](Self::run), with `extra` variables for this run only.
    pub fn run_with(&self, args: &[&str], extra: &[(&str, &str)]) -> Output {
        self.baton(args)
            .envs(extra.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("baton-testkit: cannot run baton {args:?}: {e}"))
    }

    /// Starts `baton args` with stdin closed and stdout and stderr piped, without waiting.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.baton(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("baton-testkit: cannot start baton {args:?}: {e}"))
    }

    /// Writes `text` to `rel` in the working directory, creating its directories. A test's own
    /// project settings are the user's: writing `.baton/config.toml` or a file under
    /// `.baton/roles/` trusts the project (`baton trust`) when the sandbox has a baton binary and
    /// was not made [`untrusted`](Self::untrusted).
    pub fn write(&self, rel: impl AsRef<Path>, text: &str) -> PathBuf {
        let rel = rel.as_ref();
        let path = self.work().join(rel);
        if let Some(parent) = path.parent() {
            create_dir(parent);
        }
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("baton-testkit: cannot write {}: {e}", path.display()));
        let settings = rel == Path::new(".baton/config.toml") || rel.starts_with(".baton/roles");
        if settings && self.baton.is_some() && !self.untrusted {
            self.trust();
        }
        path
    }

    /// A sandbox whose project files are not trusted when written (tests of trust itself).
    #[must_use]
    pub fn untrusted(mut self) -> Self {
        self.untrusted = true;
        self
    }

    /// Runs git in the working directory; panics unless it succeeds. Returns its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.work(), args)
    }

    /// Runs git in `dir`; panics unless it succeeds. Returns its stdout.
    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let out = self
            .command("git")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("baton-testkit: cannot run git {args:?}: {e}"));
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Makes the working directory a repository whose first branch is `branch`.
    pub fn init_repo(&self, branch: &str) {
        self.git(&["init", "-q", "-b", branch]);
    }

    /// Stages everything and commits it.
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    /// The commit subjects of `rev`'s history, newest first.
    pub fn subjects(&self, rev: &str) -> Vec<String> {
        lines(&self.git(&["log", "--format=%s", rev]))
    }

    /// The linked worktrees of the repository (the main checkout excluded).
    pub fn worktrees(&self) -> Vec<PathBuf> {
        self.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .skip(1)
            .map(PathBuf::from)
            .collect()
    }

    /// Puts a `git` into `bin/` of the temp directory that runs the shell code `on_ff_only`
    /// (where `$REAL_GIT` is the real git) when one of its arguments is `--ff-only`, and the real
    /// git otherwise. Returns a `PATH` value with that directory first, for the runs that should
    /// see it.
    pub fn git_on_ff_only(&self, on_ff_only: &str) -> String {
        let real = Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|e| panic!("baton-testkit: cannot find git: {e}"));
        let bin = self.path("bin");
        create_dir(&bin);
        let git = bin.join("git");
        std::fs::write(
            &git,
            format!(
                "#!/bin/sh\nREAL_GIT='{real}'\nfor a in \"$@\"; do if [ \"$a\" = --ff-only ]; then\n{on_ff_only}\nfi; done\nexec \"$REAL_GIT\" \"$@\"\n"
            ),
        )
        .unwrap_or_else(|e| panic!("baton-testkit: cannot write {}: {e}", git.display()));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("baton-testkit: cannot chmod {}: {e}", git.display()));
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// A sandbox for `baton flow` runs of `baton_exe`, one subagent at a time, whose working
    /// directory is a repository on `main` with one commit ("initial", a README) holding the
    /// [`FlowRoles`] test roles, which it returns.
    pub fn flow_repo(baton_exe: impl Into<PathBuf>) -> (Sandbox, FlowRoles) {
        let sb = Sandbox::new()
            .baton_exe(baton_exe)
            .env("BATON_MAX_SUBAGENTS", "1");
        sb.init_repo("main");
        sb.write("README", "hello\n");
        let roles = FlowRoles::install(&sb);
        sb.commit_all("initial");
        (sb, roles)
    }

    /// Runs `baton args` with a pseudo-terminal as its stdin (stdout and stderr piped), typing
    /// `answer` into it: how a test answers a question baton asks only on a terminal.
    pub fn run_on_terminal(&self, args: &[&str], answer: &str) -> Output {
        use std::io::Write as _;
        let pty = crate::pty::Pty::open(80, 24)
            .unwrap_or_else(|e| panic!("baton-testkit: no pseudo-terminal: {e}"));
        let slave = pty
            .slave()
            .unwrap_or_else(|e| panic!("baton-testkit: no pseudo-terminal: {e}"));
        let child = self
            .baton(args)
            .stdin(slave)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("baton-testkit: cannot start baton {args:?}: {e}"));
        let mut master = pty.close_slave();
        // The terminal holds the line until baton reads it.
        master
            .write_all(answer.as_bytes())
            .unwrap_or_else(|e| panic!("baton-testkit: cannot type into the terminal: {e}"));
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("baton-testkit: baton {args:?} did not end: {e}"));
        drop(master);
        out
    }

    /// Runs `baton trust` in the working directory: the project's widening settings and roles
    /// (a `command` role, `danger-full-access`) apply from now on, until they change.
    pub fn trust(&self) {
        let out = self.run(&["trust"]);
        assert!(
            out.status.success(),
            "baton trust failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The local branches, by short name.
    pub fn branches(&self) -> Vec<String> {
        lines(&self.git(&["branch", "--format=%(refname:short)"]))
    }
}

/// Shell code for a Flow implementer that commits `<unit>.txt` unless it is already there
/// (idempotent, as a rerun must be).
pub const COMMIT_OWN_FILE: &str = r#"
if [ ! -f "$BATON_FLOW_UNIT.txt" ]; then
  echo "$BATON_FLOW_UNIT" > "$BATON_FLOW_UNIT.txt"
  git add "$BATON_FLOW_UNIT.txt"
  git -c user.name=Impl -c user.email=impl@example.invalid -c commit.gpgsign=false commit -q -m "unit $BATON_FLOW_UNIT"
fi
echo "done $BATON_FLOW_UNIT"
"#;

/// Shell code for a Flow implementer of `unit` that rewrites `README` and adds `<unit>.txt`, in one
/// commit `unit <unit>`: two such units conflict when the second is rebased onto the first.
pub fn rewrite_readme(unit: &str) -> String {
    format!("echo '{unit} was here' > README\ntouch {unit}.txt\ngit add -A\ngit -c user.name=I -c user.email=i@x commit -qm 'unit {unit}'\n")
}

/// `command`-backend `implementer` and `reviewer` roles in a sandbox's repository, each a shell
/// script whose behaviour a test writes per unit and attempt. By default the implementer runs
/// [`COMMIT_OWN_FILE`] and the reviewer answers `PASS`.
///
/// Each launch appends `impl|review <unit> <attempt>` to `calls.log` and saves its task (its
/// stdin) as `<kind>-task-<unit>-<attempt>.txt`, then runs the first of
/// `<kind>-<unit>-<attempt>.sh`, `<kind>-<unit>.sh`, `<kind>-default.sh` that exists, with
/// `sh -e`; all of these live in [`dir`](Self::dir), outside the repository.
#[derive(Debug, Clone)]
pub struct FlowRoles {
    dir: PathBuf,
}

impl FlowRoles {
    /// Writes the role files into `.baton/roles/` of the working directory (uncommitted) and
    /// the scripts into `scripts/` of the sandbox (writing them trusts the project: they run
    /// scripts outside the repository, unconfined).
    pub fn install(sb: &Sandbox) -> FlowRoles {
        let roles = FlowRoles {
            dir: sb.path("scripts"),
        };
        create_dir(&roles.dir);
        let d = roles.dir.display();
        for (role, kind) in [("implementer", "impl"), ("reviewer", "review")] {
            let script = roles.dir.join(format!("{kind}.sh"));
            sb.write(
                format!(".baton/roles/{role}.md"),
                &format!(
                    "---\nname: {role}\ndescription: Test {role}, a shell script.\ntools: []\nbackend: command\nsandbox: danger-full-access\ncommand: [sh, {}]\n---\nThe test {role}.\n",
                    script.display()
                ),
            );
            roles.put(
                &format!("{kind}.sh"),
                &format!(
                    r#"d='{d}'
echo "{kind} $BATON_FLOW_UNIT $BATON_FLOW_ATTEMPT" >> "$d/calls.log"
cat > "$d/{kind}-task-$BATON_FLOW_UNIT-$BATON_FLOW_ATTEMPT.txt"
for f in "$d/{kind}-$BATON_FLOW_UNIT-$BATON_FLOW_ATTEMPT.sh" "$d/{kind}-$BATON_FLOW_UNIT.sh" "$d/{kind}-default.sh"; do
  if [ -f "$f" ]; then exec sh -e "$f"; fi
done
echo "no behaviour for $BATON_FLOW_UNIT" >&2
exit 9
"#
                ),
            );
        }
        roles.put("impl-default.sh", COMMIT_OWN_FILE);
        roles.put("review-default.sh", "printf PASS\n");
        roles
    }

    /// Where the scripts, `calls.log` and the saved tasks are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The implementer's behaviour for `unit` (for one `attempt` only, when given).
    pub fn implementer(&self, unit: &str, attempt: Option<u32>, body: &str) {
        self.put(&script_name("impl", unit, attempt), body);
    }

    /// Makes `unit`'s implementer signal that it started (the returned `started` file appears),
    /// then wait until the test creates the returned `go` file (at most about a minute, then it
    /// exits 7), then run [`COMMIT_OWN_FILE`]: a Flow that stays running until the test lets it go.
    pub fn hold_implementer(&self, unit: &str) -> Held {
        let held = Held {
            started: self.dir.join(format!("{unit}.started")),
            go: self.dir.join("go"),
        };
        self.implementer(
            unit,
            None,
            &format!(
                "touch '{}'\ni=0\nwhile [ ! -f '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 7; sleep 0.01; done\n{COMMIT_OWN_FILE}",
                held.started.display(),
                held.go.display()
            ),
        );
        held
    }

    /// The reviewer's behaviour for `unit` (for one `attempt` only, when given).
    pub fn reviewer(&self, unit: &str, attempt: Option<u32>, body: &str) {
        self.put(&script_name("review", unit, attempt), body);
    }

    /// `kind unit attempt` per launched child, in launch order.
    pub fn calls(&self) -> Vec<String> {
        lines(&std::fs::read_to_string(self.dir.join("calls.log")).unwrap_or_default())
    }

    /// The task a child of `kind` (`impl` or `review`) was given for `unit` at `attempt`.
    pub fn task_text(&self, kind: &str, unit: &str, attempt: u32) -> String {
        let path = self.dir.join(format!("{kind}-task-{unit}-{attempt}.txt"));
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("baton-testkit: cannot read {}: {e}", path.display()))
    }

    fn put(&self, name: &str, text: &str) {
        let path = self.dir.join(name);
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("baton-testkit: cannot write {}: {e}", path.display()));
    }
}

/// The files of an implementer held by [`FlowRoles::hold_implementer`].
#[derive(Debug, Clone)]
pub struct Held {
    /// Created by the implementer when it starts.
    pub started: PathBuf,
    /// Created by the test to let it go on.
    pub go: PathBuf,
}

impl Held {
    /// Waits (up to a minute) until the implementer started; false if it never did.
    pub fn wait_started(&self) -> bool {
        wait_until(Duration::from_secs(60), || self.started.exists())
    }

    /// Lets the implementer go on.
    pub fn release(&self) {
        std::fs::write(&self.go, "")
            .unwrap_or_else(|e| panic!("baton-testkit: cannot write {}: {e}", self.go.display()));
    }
}

fn script_name(kind: &str, unit: &str, attempt: Option<u32>) -> String {
    match attempt {
        Some(a) => format!("{kind}-{unit}-{a}.sh"),
        None => format!("{kind}-{unit}.sh"),
    }
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn create_dir(dir: &Path) {
    std::fs::create_dir_all(dir)
        .unwrap_or_else(|e| panic!("baton-testkit: cannot create {}: {e}", dir.display()));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn commands_see_only_the_sandbox() {
        let sb = Sandbox::new().env("EXTRA", "1");
        let out = sb.command("sh").args(["-c", "env"]).output().unwrap();
        let env = String::from_utf8(out.stdout).unwrap();
        assert!(
            env.contains(&format!("HOME={}", sb.home().display())),
            "{env}"
        );
        assert!(env.contains(&format!("XDG_STATE_HOME={}", sb.state_home().display())));
        assert!(env.contains("GIT_CONFIG_GLOBAL=/dev/null"));
        assert!(env.contains("EXTRA=1"));
        let pwd = sb.command("pwd").output().unwrap();
        assert_eq!(
            String::from_utf8(pwd.stdout).unwrap().trim(),
            sb.work().display().to_string()
        );
    }

    #[test]
    fn a_repository_reports_history_worktrees_and_branches() {
        let sb = Sandbox::new();
        sb.init_repo("main");
        sb.write("dir/a.txt", "a\n");
        sb.commit_all("first");
        sb.write("b.txt", "b\n");
        sb.commit_all("second");
        assert_eq!(sb.subjects("main"), ["second", "first"]);
        assert_eq!(sb.worktrees(), Vec::<PathBuf>::new());
        let linked = sb.path("linked");
        sb.git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().unwrap(),
        ]);
        assert_eq!(sb.worktrees(), vec![linked.clone()]);
        assert_eq!(sb.branches(), ["main", "side"]);
        assert_eq!(sb.git_in(&linked, &["branch", "--show-current"]), "side\n");
    }

    #[test]
    fn the_git_wrapper_intercepts_only_ff_only() {
        let sb = Sandbox::new();
        let path = sb.git_on_ff_only("echo intercepted; exit 3");
        let run = |args: &[&str]| {
            sb.command("git")
                .args(args)
                .env("PATH", &path)
                .output()
                .unwrap()
        };
        let out = run(&["merge", "--ff-only", "x"]);
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).trim()
            ),
            (Some(3), "intercepted")
        );
        assert!(run(&["--version"]).status.success());
    }

    #[test]
    fn wait_until_answers_the_last_poll() {
        let mut n = 0;
        assert!(wait_until(Duration::from_secs(5), || {
            n += 1;
            n == 3
        }));
        assert!(!wait_until(Duration::from_millis(30), || false));
    }

    #[test]
    fn flow_roles_pick_the_most_specific_script_and_log_calls() {
        let sb = Sandbox::new();
        sb.init_repo("main");
        let roles = FlowRoles::install(&sb);
        roles.implementer("a", Some(1), "echo one\n");
        roles.implementer("a", None, "echo any\n");
        let run = |attempt: &str| {
            let out = sb
                .command("sh")
                .arg(roles.dir().join("impl.sh"))
                .env("BATON_FLOW_UNIT", "a")
                .env("BATON_FLOW_ATTEMPT", attempt)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(run("1"), "one\n");
        assert_eq!(run("0"), "any\n");
        assert_eq!(roles.calls(), ["impl a 1", "impl a 0"]);
        assert_eq!(roles.task_text("impl", "a", 1), "");
        assert!(sb.work().join(".baton/roles/reviewer.md").is_file());
    }
}
