//! Inputs baton refuses before anything runs, through the built binary: durations of 0, prices
//! and budgets that are not finite or are negative (each named by its key, with the fix), and
//! input files that are not regular files or hold more than 16 MiB (each named by its path) —
//! a units file, a task entries file, a role file, a cassette, a config file and a task read
//! from stdin. Every run of the binary here has its address space capped (`ulimit -v`), so a
//! baton that still read `/dev/zero` to its end fails the test instead of eating the machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};

use baton_testkit::fixture::{assert_exit, Sandbox};

fn sandbox() -> Sandbox {
    Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"))
}

/// `baton args` in `sb` with at most 2 GiB of address space.
fn capped(sb: &Sandbox, args: &[&str]) -> Command {
    let exe = env!("CARGO_BIN_EXE_baton");
    let mut cmd = sb.command("sh");
    cmd.arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" \"$@\"")
        .arg(exe)
        .args(args)
        .stdin(Stdio::null());
    cmd
}

fn run(sb: &Sandbox, args: &[&str]) -> Output {
    capped(sb, args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Refused with exit 2, the message containing each of `needles`.
fn refused(o: &Output, needles: &[&str]) {
    assert_exit(o, 2);
    let e = stderr(o);
    for n in needles {
        assert!(e.contains(n), "expected {n:?} in:\n{e}");
    }
}

#[test]
fn a_zero_duration_is_refused_naming_its_key() {
    for (toml, key) in [
        ("[agent]\nbash_timeout = \"0s\"\n", "agent.bash_timeout"),
        ("[retry]\ninitial_delay = \"0ms\"\n", "retry.initial_delay"),
        ("[retry]\nmax_delay = \"0s\"\n", "retry.max_delay"),
        (
            "[executor]\nidle_timeout = \"0m\"\n",
            "executor.idle_timeout",
        ),
        ("[executor]\nmax_timeout = \"0h\"\n", "executor.max_timeout"),
        (
            "[providers.mock]\nkind = \"openai\"\nstream_idle_timeout = \"0s\"\n",
            "providers.mock.stream_idle_timeout",
        ),
    ] {
        let sb = sandbox().baton_config(toml);
        let o = run(&sb, &["models"]);
        refused(&o, &[key, "more than 0", "baton.toml"]);
    }
    // BATON_HEARTBEAT is a duration too.
    let sb = sandbox().env("BATON_HEARTBEAT", "0s");
    let cassette = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/demo.cassette.json"
    );
    let o = run(&sb, &["agent", "--replay", cassette, "hello"]);
    refused(&o, &["BATON_HEARTBEAT", "more than 0"]);
}

#[test]
fn a_price_or_budget_that_is_not_a_finite_positive_number_is_refused_naming_its_key() {
    for (toml, key) in [
        (
            "[prices.\"mock/m\"]\ninput = nan\noutput = 1.0\n",
            "prices.\"mock/m\".input = NaN",
        ),
        (
            "[prices.\"mock/m\"]\ninput = 1.0\noutput = -2.0\n",
            "prices.\"mock/m\".output = -2",
        ),
        (
            "[prices.\"mock/m\"]\ninput = 1.0\noutput = 1.0\ncached_input = inf\n",
            "prices.\"mock/m\".cached_input = inf",
        ),
        (
            "[prices.\"mock/m\"]\ninput = 1.0\noutput = 1.0\ncache_write = -0.1\n",
            "prices.\"mock/m\".cache_write",
        ),
        (
            "[workflow]\nbudget_usd = nan\n",
            "workflow.budget_usd = NaN",
        ),
        (
            "[workflow]\nbudget_usd = -1.0\n",
            "workflow.budget_usd = -1",
        ),
        (
            "[workflow]\nbudget_tokens = 0\n",
            "workflow.budget_tokens = 0",
        ),
    ] {
        let sb = sandbox().baton_config(toml);
        let o = run(&sb, &["models"]);
        refused(&o, &[key, "baton.toml"]);
    }
    // `baton run` refuses a NaN budget from the config before it records anything.
    let sb = sandbox().baton_config("[workflow]\nbudget_usd = nan\n");
    sb.init_repo("main");
    let o = run(&sb, &["run", "add a feature file"]);
    refused(&o, &["workflow.budget_usd"]);
    assert!(!sb.work().join(".baton/state/workflows").exists());
    // The flag is checked the same way.
    let sb = sandbox();
    for flag in ["NaN", "-1", "inf", "0"] {
        let flag = format!("--budget-usd={flag}");
        let o = run(&sb, &["run", &flag, "add a feature file"]);
        refused(&o, &["--budget-usd", "give a positive amount"]);
    }
}

/// A sparse file one byte over the 16 MiB cap (it takes no room on disk).
fn oversized(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let path = sb.path(name);
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(16 * 1024 * 1024 + 1).unwrap();
    path
}

#[test]
fn an_input_file_that_is_a_device_or_over_the_cap_is_refused_naming_it() {
    let sb = sandbox();
    sb.init_repo("main");
    let big = oversized(&sb, "big.json");
    let big = big.to_str().unwrap();
    for file in ["/dev/zero", big] {
        let why = if file == "/dev/zero" {
            "not a regular file (a device)"
        } else {
            "larger than 16 MiB"
        };
        // A units file (baton flow).
        let o = run(&sb, &["flow", "start", file]);
        refused(&o, &[file, why]);
        // A task entries file.
        let o = run(&sb, &["task", "--parallel", file]);
        refused(&o, &[file, why]);
        // A role file.
        let o = run(&sb, &["agent", "--role-file", file, "hello"]);
        refused(&o, &["--role-file", file, why]);
        // A cassette.
        let o = run(&sb, &["agent", "--replay", file, "hello"]);
        refused(&o, &["--replay", file, why]);
        // A config file (BATON_CONFIG must name a file: a device is refused there already).
        let o = capped(&sb, &["models"])
            .env("BATON_CONFIG", file)
            .output()
            .unwrap();
        refused(&o, &[file]);
    }
    // The project's config file, as a link to a device and as a huge file.
    std::fs::create_dir_all(sb.work().join(".baton")).unwrap();
    let project_config = sb.work().join(".baton/config.toml");
    std::os::unix::fs::symlink("/dev/zero", &project_config).unwrap();
    let o = run(&sb, &["models"]);
    refused(&o, &[".baton/config.toml", "not a regular file (a device)"]);
    std::fs::remove_file(&project_config).unwrap();
    std::fs::rename(big, &project_config).unwrap();
    let o = run(&sb, &["models"]);
    refused(&o, &[".baton/config.toml", "larger than 16 MiB"]);
    std::fs::remove_file(&project_config).unwrap();

    // A task read from stdin is capped the same way.
    for args in [
        &["agent", "--replay", "x.json", "-"][..],
        &["task", "--role", "scout", "-"],
    ] {
        let o = capped(&sb, args)
            .stdin(std::fs::File::open("/dev/zero").unwrap())
            .output()
            .unwrap();
        refused(&o, &["stdin", "larger than 16 MiB"]);
    }
}
