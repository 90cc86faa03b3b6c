use baton_protocol::role::{RoleFrontmatter, RoleSource, RoleSpec};
use baton_protocol::ModelClass;

use super::*;
use crate::contract;

fn role(name: &str, class: Option<ModelClass>) -> RoleSpec {
    RoleSpec {
        meta: RoleFrontmatter {
            name: name.into(),
            description: "d".into(),
            tools: vec!["read".into()],
            skills: vec![],
            mcp: vec![],
            extensions: vec![],
            isolation: None,
            model_class: class,
            backend: None,
            command: None,
            sandbox: None,
        },
        body: "b".into(),
        source: RoleSource::Project(".baton/roles/r.md".into()),
    }
}

fn config(name: &str, class: ModelClass) -> TierConfig {
    TierConfig {
        classes: [(name.to_string(), class)].into(),
    }
}

#[test]
fn the_table_covers_every_agent_phase_of_the_workflows() {
    let workflow_owned = [
        "build",
        "build-finish",
        "debug",
        "review",
        "plan",
        "memory-finalize",
    ];
    for phase in Phase::ALL {
        assert_eq!(
            role_for_phase(phase.as_str()).is_none(),
            workflow_owned.contains(&phase.as_str()),
            "{phase}"
        );
    }
    // Every workflow role runs somewhere.
    for r in Role::ALL {
        assert!(PHASE_ROLES.iter().any(|(_, x)| *x == r), "{r}");
    }
    assert_eq!(role_for_phase("build-hunt"), Some(Role::FailureHunter));
    assert_eq!(
        role_for_phase("plan-review-gap-2"),
        Some(Role::PlanGapReviewer)
    );
    assert_eq!(role_for_phase("research-github"), Some(Role::Researcher));
    assert_eq!(
        role_for_task(TaskKind::Remfix, "build-implement", "bug-investigator"),
        Some(Role::BugInvestigator)
    );
    for origin in ["code-reviewer", "integration-verifier", "router"] {
        assert_eq!(
            role_for_task(TaskKind::Remfix, "N/A", origin),
            Some(Role::ComponentBuilder)
        );
    }
    assert_eq!(
        role_for_task(TaskKind::Agent, "re-verify", "N/A"),
        Some(Role::IntegrationVerifier)
    );
}

#[test]
fn the_floor_refuses_fast_for_a_reviewer_and_accepts_frontier() {
    let none = TierConfig::default();
    for name in [
        "code-reviewer",
        "failure-hunter",
        "integration-verifier",
        "plan-gap-reviewer",
    ] {
        // From the config.
        let e = tier_for(&role(name, None), &config(name, ModelClass::Fast)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(&format!("role `{name}`")), "{msg}");
        assert!(msg.contains("the config's tier"), "{msg}");
        assert!(msg.contains("`fast`"), "{msg}");
        assert!(msg.contains("set it to `balanced` or `frontier`"), "{msg}");
        // From a role file.
        let e = tier_for(&role(name, Some(ModelClass::Fast)), &none).unwrap_err();
        assert!(e.to_string().contains(".baton/roles/r.md"), "{e}");
        // `fav` cannot be ranked.
        let e = tier_for(&role(name, Some(ModelClass::Fav)), &none).unwrap_err();
        assert!(e.to_string().contains("rank is unknown"), "{e}");
        // The config wins over the role file, upwards too.
        assert_eq!(
            tier_for(
                &role(name, Some(ModelClass::Fast)),
                &config(name, ModelClass::Frontier)
            ),
            Ok(ModelClass::Frontier)
        );
        assert_eq!(
            tier_for(&role(name, Some(ModelClass::Balanced)), &none),
            Ok(ModelClass::Balanced)
        );
    }
}

#[test]
fn other_roles_take_any_class_and_defaults_come_from_the_tier() {
    let none = TierConfig::default();
    assert_eq!(
        tier_for(
            &role("component-builder", None),
            &config("component-builder", ModelClass::Fast)
        ),
        Ok(ModelClass::Fast)
    );
    assert_eq!(
        tier_for(&role("planner", Some(ModelClass::Fav)), &none),
        Ok(ModelClass::Fav)
    );
    assert_eq!(
        tier_for(&role("doc-syncer", None), &none),
        Ok(ModelClass::Fast)
    );
    assert_eq!(
        tier_for(&role("integration-verifier", None), &none),
        Ok(ModelClass::Frontier)
    );
    assert_eq!(
        tier_for(&role("mine", None), &none),
        Ok(ModelClass::Balanced)
    );
    // An alias is a different role: no floor.
    assert_eq!(
        tier_for(
            &role("silent-failure-hunter", Some(ModelClass::Fast)),
            &none
        ),
        Ok(ModelClass::Fast)
    );
}

#[test]
fn built_in_roles_match_the_tiers_and_their_prompts_show_a_valid_contract() {
    let builtins = baton_roles::builtin_roles().unwrap();
    for r in Role::ALL {
        let spec = builtins
            .iter()
            .find(|s| s.name() == r.name())
            .unwrap_or_else(|| panic!("no built-in role {r}"));
        assert_eq!(spec.meta.model_class, Some(r.default_tier().class()), "{r}");
        assert_eq!(
            tier_for(spec, &TierConfig::default()),
            Ok(r.default_tier().class()),
            "{r}"
        );
        // Read-only roles' shells cannot write, except the verifier's, which builds and runs the
        // tests (the runner stops the workflow if it changes a tracked file).
        use baton_protocol::sandbox::SandboxMode;
        let expected = match r {
            Role::IntegrationVerifier => SandboxMode::WorkspaceWrite,
            _ if r.is_read_only() => SandboxMode::ReadOnly,
            _ => spec.meta.sandbox.unwrap_or_default(),
        };
        assert_eq!(spec.meta.sandbox.unwrap_or_default(), expected, "{r}");
        assert!(
            !spec
                .meta
                .tools
                .iter()
                .any(|t| r.is_read_only() && (t == "write" || t == "edit")),
            "{r}"
        );
        // The example a prompt shows is a contract baton accepts, and a passing one.
        let example = if r.is_read_only() {
            let at = spec.body.find("CONTRACT {").unwrap();
            &spec.body[at..]
        } else {
            spec.body.as_str()
        };
        let checked = contract::parse(r, example).unwrap_or_else(|e| panic!("{r}: {e}"));
        assert!(checked.advances(), "{r}: {:?}", checked.outcome);
    }
}
