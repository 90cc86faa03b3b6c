//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

pub mod mcp;
pub mod workflow;

/// A project role of backend `command` running `sh -c command` (the task arrives on its stdin).
pub fn command_role(sb: &baton_testkit::fixture::Sandbox, name: &str, command: &str) {
    sb.write(
        format!(".baton/roles/{name}.md"),
        &format!(
            "---\nname: {name}\ndescription: test role\ntools: []\nbackend: command\ncommand: [sh, -c, {}]\n---\nDo it.\n",
            serde_json::to_string(command).unwrap()
        ),
    );
}
