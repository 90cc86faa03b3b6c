//! A temp repository with `command`-backend implementer and reviewer roles whose behaviour each
//! test writes as small shell scripts, per unit and attempt.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use baton_exec::delegate::DelegateEnv;
use baton_exec::executor::Executor;
use baton_exec::types::Limits;
use baton_flow::{FlowEnv, UnitSpec, ValidationCommand};
use baton_git::Git;
use baton_model::routes::ProcessEnv;
use baton_protocol::config::Config;
use baton_roles::RoleDirs;
use tempfile::TempDir;

pub const IDENTITY: [(&str, &str); 6] = [
    ("GIT_AUTHOR_NAME", "Flow Test"),
    ("GIT_AUTHOR_EMAIL", "flow@example.invalid"),
    ("GIT_COMMITTER_NAME", "Flow Test"),
    ("GIT_COMMITTER_EMAIL", "flow@example.invalid"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
];

/// Commits `<unit>.txt` unless it is already there (idempotent, as a rerun must be).
pub const COMMIT_OWN_FILE: &str = r#"
if [ ! -f "$BATON_FLOW_UNIT.txt" ]; then
  echo "$BATON_FLOW_UNIT" > "$BATON_FLOW_UNIT.txt"
  git add "$BATON_FLOW_UNIT.txt"
  git -c user.name=Impl -c user.email=impl@example.invalid -c commit.gpgsign=false commit -q -m "unit $BATON_FLOW_UNIT"
fi
echo "done $BATON_FLOW_UNIT"
"#;

pub struct Fx {
    pub tmp: TempDir,
}

impl Fx {
    pub fn new() -> Fx {
        let fx = Fx {
            tmp: TempDir::new().unwrap(),
        };
        std::fs::create_dir_all(fx.scripts()).unwrap();
        let g = fx.git(&fx.repo());
        g.init("main").unwrap();
        fx.write("README", "hello\n");
        let s = fx.scripts();
        for (role, kind) in [("implementer", "impl"), ("reviewer", "review")] {
            fx.write(
                &format!(".baton/roles/{role}.md"),
                &format!(
                    "---\nname: {role}\ndescription: Test {role}, a shell script.\ntools: []\nbackend: command\ncommand: [sh, {}]\n---\nThe test {role}.\n",
                    s.join(format!("{kind}.sh")).display()
                ),
            );
            std::fs::write(
                s.join(format!("{kind}.sh")),
                format!(
                    r#"d='{d}'
echo "{kind} $BATON_FLOW_UNIT $BATON_FLOW_ATTEMPT" >> "$d/calls.log"
cat > "$d/{kind}-task-$BATON_FLOW_UNIT-$BATON_FLOW_ATTEMPT.txt"
for f in "$d/{kind}-$BATON_FLOW_UNIT-$BATON_FLOW_ATTEMPT.sh" "$d/{kind}-$BATON_FLOW_UNIT.sh" "$d/{kind}-default.sh"; do
  if [ -f "$f" ]; then exec sh -e "$f"; fi
done
echo "no behaviour for $BATON_FLOW_UNIT" >&2
exit 9
"#,
                    d = s.display()
                ),
            )
            .unwrap();
        }
        std::fs::write(s.join("impl-default.sh"), COMMIT_OWN_FILE).unwrap();
        std::fs::write(s.join("review-default.sh"), "printf PASS\n").unwrap();
        g.commit_all("initial").unwrap().unwrap();
        fx
    }

    pub fn repo(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    pub fn scripts(&self) -> PathBuf {
        self.tmp.path().join("scripts")
    }

    pub fn wt_root(&self) -> PathBuf {
        self.tmp.path().join("worktrees")
    }

    pub fn git(&self, dir: &Path) -> Git {
        IDENTITY
            .iter()
            .fold(Git::new(dir), |g, (k, v)| g.with_env(*k, *v))
    }

    pub fn main(&self) -> Git {
        self.git(&self.repo())
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.repo().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// The implementer's behaviour for `unit` (and `attempt`, when given).
    pub fn implementer(&self, unit: &str, attempt: Option<u32>, body: &str) {
        let name = match attempt {
            Some(a) => format!("impl-{unit}-{a}.sh"),
            None => format!("impl-{unit}.sh"),
        };
        std::fs::write(self.scripts().join(name), body).unwrap();
    }

    pub fn reviewer(&self, unit: &str, attempt: Option<u32>, body: &str) {
        let name = match attempt {
            Some(a) => format!("review-{unit}-{a}.sh"),
            None => format!("review-{unit}.sh"),
        };
        std::fs::write(self.scripts().join(name), body).unwrap();
    }

    pub fn env(&self, max_concurrency: usize) -> FlowEnv {
        let delegate = DelegateEnv {
            config: Config::default(),
            role_dirs: RoleDirs {
                user: None,
                project: Some(self.repo().join(".baton").join("roles")),
            },
            cwd: self.repo(),
            state: baton_state::StateDir::for_project(&self.repo()),
            worktree_root: self.wt_root(),
            baton_exe: PathBuf::from("/nonexistent/baton"),
            limits: Limits {
                idle_timeout: Duration::from_secs(60),
                max_timeout: Duration::from_secs(120),
            },
            output_cap: 50 * 1024,
            env: Arc::new(ProcessEnv),
            reload: None,
        };
        let mut env = FlowEnv::new(delegate, Arc::new(Executor::new(max_concurrency)));
        env.git_env = IDENTITY
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        env
    }

    /// `kind unit attempt` per launched child, in launch order.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.scripts().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn task_text(&self, kind: &str, unit: &str, attempt: u32) -> String {
        std::fs::read_to_string(
            self.scripts()
                .join(format!("{kind}-task-{unit}-{attempt}.txt")),
        )
        .unwrap()
    }

    /// Subjects of Main's history, newest first.
    pub fn subjects(&self) -> Vec<String> {
        self.main()
            .run(["log", "--format=%s", "main"])
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn head(&self) -> String {
        self.main().head_oid().unwrap().unwrap()
    }

    /// Linked worktrees of the repository (the main checkout excluded).
    pub fn worktrees(&self) -> Vec<PathBuf> {
        self.main()
            .worktree_list()
            .unwrap()
            .into_iter()
            .skip(1)
            .map(|w| w.path)
            .collect()
    }

    pub fn branches(&self) -> Vec<String> {
        self.main()
            .run(["branch", "--format=%(refname:short)"])
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn clean(&self) -> bool {
        self.main().is_clean().unwrap()
    }
}

pub fn unit(id: &str) -> UnitSpec {
    UnitSpec {
        id: id.into(),
        name: format!("Unit {id}"),
        task: format!("Add {id}.txt"),
        model_class: None,
        validation: vec![ValidationCommand {
            command: "test".into(),
            args: vec!["-f".into(), format!("{id}.txt")],
        }],
        review: None,
    }
}

pub fn reviewed(id: &str, criterion: &str) -> UnitSpec {
    UnitSpec {
        review: Some(criterion.into()),
        ..unit(id)
    }
}
