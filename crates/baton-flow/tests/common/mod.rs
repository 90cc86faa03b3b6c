//! A temp repository (from baton-testkit) with `command`-backend implementer and reviewer roles
//! whose behaviour each test writes as small shell scripts, per unit and attempt, and the
//! `FlowEnv` that runs Flow in process against it.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::ops::Deref;
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
use baton_testkit::fixture::{FlowRoles, Sandbox, GIT_ENV};

pub use baton_testkit::fixture::COMMIT_OWN_FILE;

/// The sandbox (its working directory is the repository) and the role scripts; the sandbox's
/// helpers (`work`, `write`, `subjects`, `worktrees`, `branches`, …) are reached through `Deref`.
pub struct Fx {
    pub sb: Sandbox,
    pub roles: FlowRoles,
}

impl Deref for Fx {
    type Target = Sandbox;

    fn deref(&self) -> &Sandbox {
        &self.sb
    }
}

impl Fx {
    pub fn new() -> Fx {
        let sb = Sandbox::new();
        sb.init_repo("main");
        sb.write("README", "hello\n");
        let roles = FlowRoles::install(&sb);
        sb.commit_all("initial");
        Fx { sb, roles }
    }

    pub fn repo(&self) -> PathBuf {
        self.sb.work()
    }

    pub fn wt_root(&self) -> PathBuf {
        self.sb.path("worktrees")
    }

    pub fn git(&self, dir: &Path) -> Git {
        GIT_ENV
            .iter()
            .fold(Git::new(dir), |g, (k, v)| g.with_env(*k, *v))
    }

    pub fn main(&self) -> Git {
        self.git(&self.repo())
    }

    pub fn env(&self, max_concurrency: usize) -> FlowEnv {
        let delegate = DelegateEnv {
            config: Config::default(),
            role_dirs: RoleDirs {
                user: None,
                project: Some(self.repo().join(".baton").join("roles")),
                project_trusted: baton_roles::Trust::Yes,
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
        env.git_env = GIT_ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        env
    }

    /// Subjects of Main's history, newest first.
    pub fn subjects(&self) -> Vec<String> {
        self.sb.subjects("main")
    }

    pub fn head(&self) -> String {
        self.main().head_oid().unwrap().unwrap()
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
