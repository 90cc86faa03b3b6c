//! Embeds the git commit baton is built from as `BATON_GIT_COMMIT` (shown by `baton --version`).
//! Without git, or outside a checkout (a crate tarball), it is `unknown`: the build never fails
//! because of it.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(std::env::var_os("CARGO_MANIFEST_DIR")?)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// Whether the binaries may use packed relative relocations (`DT_RELR`): a native GNU/Linux
/// build on glibc 2.36 or later (older loaders refuse such a binary; the linkers of that age know
/// the flag). Set `BATON_NO_RELR=1` to leave them out.
fn relr_ok() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
        || std::env::var_os("BATON_NO_RELR").is_some()
    {
        return false;
    }
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    // "glibc 2.36"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut version = text.trim().trim_start_matches("glibc ").split('.');
    let major: u32 = version.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let minor: u32 = version.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    (major, minor) >= (2, 36)
}

/// Whether the linker is rustc's own `rust-lld`, which takes a symbol ordering file: the default
/// for a native `x86_64-unknown-linux-gnu` build from Rust 1.90 on, unless the environment names
/// another linker. Set `BATON_NO_TEXT_ORDER=1` to leave the ordering out (a linker set in a
/// cargo config file is not visible here).
fn text_order_ok() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("TARGET") != "x86_64-unknown-linux-gnu"
        || var("TARGET") != var("HOST")
        || std::env::var_os("BATON_NO_TEXT_ORDER").is_some()
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
        || var("CARGO_ENCODED_RUSTFLAGS").contains("link")
    {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-V").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut version = text.split_whitespace().nth(1).unwrap_or("").split('.');
    let major: u32 = version.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let minor: u32 = version.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    (major, minor) >= (1, 90)
}

/// Whether `baton` is linked as a fixed-address executable: a native GNU/Linux build, unless
/// `BATON_PIE=1`. A position-independent one has half a MiB of pointers (`.data.rel.ro`) that the
/// loader rewrites at every start, a copy-on-write fault per page; at a fixed address they are
/// final on disk and read only where used (bench/README.md, "Session start"). The cost: the
/// binary's own code is not placed at a random address (libraries, stack and heap still are).
fn fixed_address_ok() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && var("TARGET") == var("HOST")
        && std::env::var_os("BATON_PIE").is_none()
}

fn main() {
    println!("cargo:rerun-if-env-changed=BATON_PIE");
    if fixed_address_ok() {
        println!("cargo:rustc-link-arg-bin=baton=-no-pie");
    }
    println!("cargo:rerun-if-env-changed=BATON_NO_RELR");
    if relr_ok() {
        // Relocations packed into a few KiB instead of 800 KiB that every start reads.
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-env-changed=BATON_NO_TEXT_ORDER");
    println!("cargo:rerun-if-changed=text-order.txt");
    if text_order_ok() {
        // The functions a session runs, side by side at the start of the code: a session maps
        // in a few MiB less of the binary (bench/README.md, "Session start").
        let order = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default())
            .join("text-order.txt");
        println!(
            "cargo:rustc-link-arg-bin=baton=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=baton=-Wl,--no-warn-symbol-ordering");
    }
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=BATON_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
    // Rebuild when HEAD moves: HEAD names the branch, and the reflog of HEAD grows with every
    // commit, checkout or reset in this worktree.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = PathBuf::from(dir);
        for file in [dir.join("HEAD"), dir.join("logs").join("HEAD")] {
            if file.exists() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
        }
    }
}
