//! Skills through the built `baton`: a main session is offered every skill of the project and the
//! user by name and description and reads one with `read` (a user skill lies outside the
//! workspace root); a delegated child gets exactly the skills its role names; `baton skills`
//! lists them and `baton roles check` refuses a role naming one that does not exist.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_testkit::fixture::{assert_exit, json_lines, Sandbox};
use baton_testkit::Role;
use baton_testkit::{MockServer, Turn};
use serde_json::json;

fn skill(dir: &std::path::Path, name: &str, description: &str, body: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    )
    .unwrap();
}

/// A project with a project skill (`style`), a Claude Code skill (`review-checklist`), a user
/// skill (`pdf`, outside the project), a broken one, and a role naming `style` and `ghost`.
fn project(server: &MockServer) -> Sandbox {
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            server,
            "openai",
            "[models]\ndefault_class = \"balanced\"\nbalanced = \"mock/m\"\n",
        );
    skill(
        &p.work().join(".baton/skills"),
        "style",
        "House style for every edit",
        "Indent with tabs.",
    );
    skill(
        &p.work().join(".claude/skills"),
        "review-checklist",
        "What to check in a review",
        "Check the tests.",
    );
    skill(
        &p.config_home().join("baton/skills"),
        "pdf",
        "Reading and filling PDF forms",
        "Use pdftotext first.",
    );
    std::fs::create_dir_all(p.work().join(".baton/skills/broken")).unwrap();
    std::fs::write(
        p.work().join(".baton/skills/broken/SKILL.md"),
        "---\nname: broken\n---\nno description\n",
    )
    .unwrap();
    p.write(
        ".baton/roles/styler.md",
        "---\nname: styler\ndescription: restyles code\ntools: [read]\nskills: [style, ghost]\n---\nRestyle the code.\n",
    );
    p
}

fn system_prompt(server: &MockServer, i: usize) -> String {
    server.model_requests()[i]
        .messages()
        .into_iter()
        .find(|m| m.role == Role::System)
        .map(|m| m.text)
        .unwrap_or_default()
}

/// The user skill `pdf` as the working directory (the project) reaches it: outside the root.
const PDF: &str = "../config/baton/skills/pdf/SKILL.md";

#[test]
fn a_main_session_is_offered_every_skill_and_reads_one_outside_the_root() {
    let server = MockServer::builder()
        .turn(Turn::tool_call("c1", "read", json!({"path": PDF})))
        .turn(Turn::text("Read the pdf skill."))
        .start_blocking();
    let p = project(&server);
    let out = p.run(&["agent", "--json", "fill the form"]);
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: skipped skill")
            && stderr.contains("broken/SKILL.md")
            && stderr.contains("`description`"),
        "{stderr}"
    );
    let system = system_prompt(&server, 0);
    let section = &system[system.find("# Skills").expect(&system)..];
    for (name, description) in [
        ("pdf", "Reading and filling PDF forms"),
        ("review-checklist", "What to check in a review"),
        ("style", "House style for every edit"),
    ] {
        assert!(
            section.contains(&format!("- {name}: {description} (")),
            "{section}"
        );
    }
    let pdf = p.work().join(PDF).canonicalize().unwrap();
    assert!(section.contains(&pdf.display().to_string()), "{section}");
    assert!(!section.contains("broken"), "{section}");
    // The read outside the root is allowed in a skill's folder.
    let result = server.model_requests()[1].result_of("c1");
    assert!(result.contains("Use pdftotext first."), "{result}");
    assert_eq!(json_lines(&out).last().unwrap()["outcome"], "completed");
}

#[test]
fn a_read_may_not_leave_a_skill_folder_through_a_link_or_reach_beside_it() {
    let secret = tempfile::tempdir().unwrap();
    std::fs::write(secret.path().join("key.txt"), "SECRET-VALUE").unwrap();
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "read",
            json!({"path": "../config/baton/skills/pdf/key.txt"}),
        ))
        .turn(Turn::tool_call(
            "c2",
            "read",
            json!({"path": "../config/baton/config.toml"}),
        ))
        .turn(Turn::text("done"))
        .start_blocking();
    let p = project(&server);
    std::os::unix::fs::symlink(
        secret.path().join("key.txt"),
        p.config_home().join("baton/skills/pdf/key.txt"),
    )
    .unwrap();
    std::fs::write(
        p.config_home().join("baton/config.toml"),
        "# SECRET-VALUE\n",
    )
    .unwrap();
    let out = p.run(&["agent", "--json", "read it"]);
    assert_exit(&out, 0);
    for (i, call) in [(1, "c1"), (2, "c2")] {
        let result = server.model_requests()[i].result_of(call);
        assert!(!result.contains("SECRET-VALUE"), "{result}");
        assert!(result.contains("outside the workspace root"), "{result}");
    }
}

#[test]
fn a_child_gets_exactly_the_skills_its_role_names() {
    let server = MockServer::builder()
        .turn(Turn::text("Restyled."))
        .turn(Turn::text("Listed."))
        .start_blocking();
    let p = project(&server).env("BATON_CHILD", "1");
    let out = p.run(&["agent", "--json", "--role", "styler", "restyle main.rs"]);
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("role styler names skill `ghost`, which is in none of the skill folders"),
        "{stderr}"
    );
    // No warning of the project's bad skill file: a child does not look at the others.
    assert!(!stderr.contains("broken"), "{stderr}");
    let system = system_prompt(&server, 0);
    let section = &system[system.find("# Skills").expect(&system)..];
    assert!(
        section.contains("- style: House style for every edit"),
        "{section}"
    );
    assert!(
        !section.contains("pdf") && !section.contains("review-checklist"),
        "{section}"
    );

    // Without `read` a skill cannot be opened: none is offered, and a warning says why.
    p.write(
        ".baton/roles/blind.md",
        "---\nname: blind\ndescription: lists\ntools: [ls]\nskills: [style]\n---\nList.\n",
    );
    let out = p.run(&["agent", "--json", "--role", "blind", "list"]);
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("role blind has no `read` tool, so its skills (style) cannot be opened"),
        "{stderr}"
    );
    assert!(!system_prompt(&server, 1).contains("# Skills"));
}

#[test]
fn a_delegated_child_gets_its_role_s_skills_as_main_resolved_them() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate_task",
            json!({"tasks": [{"role": "styler", "name": "restyle", "task": "restyle lib.rs"}]}),
        ))
        // The child (offered only `read`) answers from the same server.
        .when(|r| r.offered_tools() == ["read"], Turn::text("Restyled."))
        .turn(Turn::text("The child restyled it."))
        .start_blocking();
    let p = project(&server);
    let out = p.run(&["agent", "--json", "restyle through a child"]);
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("role styler names skill `ghost`, which is in none of the skill folders"),
        "{stderr}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let reqs = server.model_requests();
    let child = reqs
        .iter()
        .find(|r| r.offered_tools() == ["read"])
        .expect("the child's request");
    let system = child
        .messages()
        .into_iter()
        .find(|m| m.role == Role::System)
        .unwrap()
        .text;
    let section = &system[system.find("# Skills").expect(&system)..];
    let style = p.work().join(".baton/skills/style").canonicalize().unwrap();
    assert!(
        section.contains(&format!(
            "- style: House style for every edit ({})",
            style.join("SKILL.md").display()
        )),
        "{section}"
    );
    assert!(
        !section.contains("pdf") && !section.contains("review-checklist"),
        "{section}"
    );
}

#[test]
fn skills_lists_them_and_roles_check_refuses_an_unknown_name() {
    let server = MockServer::builder().start_blocking();
    let p = project(&server);
    let out = p.run(&["skills", "--json"]);
    assert_exit(&out, 0);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = doc["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pdf", "review-checklist", "style"]);
    let style = &doc["skills"][2];
    assert_eq!(style["source"], "project");
    assert_eq!(style["roles"], json!(["styler"]));
    assert_eq!(doc["skills"][0]["source"], "user");
    assert_eq!(doc["skills"][1]["source"], "claude");
    assert!(doc["invalid"][0]
        .as_str()
        .unwrap()
        .contains("broken/SKILL.md"));

    let out = p.run(&["skills"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("style") && text.contains("roles=styler"),
        "{text}"
    );
    assert!(text.contains("invalid skills (skipped):"), "{text}");

    let out = p.run(&["roles", "check"]);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("role styler")
            && stderr.contains("skill `ghost` is in none of the skill folders"),
        "{stderr}"
    );
    // A Claude Code role cannot be given its skills: `baton roles` says so.
    p.write(
        ".baton/roles/peer.md",
        "---\nname: peer\ndescription: a peer\ntools: [read]\nskills: [style]\nbackend: claude\n---\nBody.\n",
    );
    let out = p.run(&["roles"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("skills=[style,ghost]"), "{text}");
    assert!(
        text.contains("skills=[style] (not passed: Claude Code has no way to be given skills"),
        "{text}"
    );
    let out = p.run(&["roles", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let peer = doc["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "peer")
        .unwrap();
    assert!(
        peer["skills_note"]
            .as_str()
            .unwrap()
            .contains(".claude/skills"),
        "{peer}"
    );
}

#[test]
fn skills_paths_adds_a_folder_and_ignore_drops_one() {
    let server = MockServer::builder().start_blocking();
    let p = project(&server);
    skill(
        &p.work().join("docs/skills"),
        "deploy",
        "How we deploy",
        "Run make deploy.",
    );
    p.write(
        ".baton/config.toml",
        "[skills]\npaths = [\"docs/skills\"]\nignore = [\".claude/skills\"]\n",
    );
    p.trust();
    let out = p.run(&["skills", "--json"]);
    assert_exit(&out, 0);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<(&str, &str)> = doc["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["name"].as_str().unwrap(), k["source"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [("deploy", "config"), ("pdf", "user"), ("style", "project")]
    );
}
