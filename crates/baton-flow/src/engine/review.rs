//! A unit's review: its packet (the exact patch `base..tip`, within seed 004's limits), the
//! reviewer's task, and how an answer is read. One mechanism for the local Flow and for a Flow on
//! Temporal, whose worker nodes review in `baton.integrate` (crate `baton-temporal`).

use std::path::{Path, PathBuf};

use crate::units::UnitSpec;

/// The largest patch one review packet holds (seed 004's `REVIEW_MAX_PATCH_BYTES`; the value is
/// baton's: a reviewer model reads 512 KiB of diff in one sitting).
pub const REVIEW_MAX_PATCH_BYTES: usize = 512 * 1024;
/// The most files one review packet covers (seed 004's `REVIEW_MAX_PATHS`; baton's value).
pub const REVIEW_MAX_PATHS: usize = 200;

/// Why `patch` cannot go in one packet (the unit is then not reviewed), or `None`.
pub fn too_large(patch: &[u8], base: &str, tip: &str) -> Option<String> {
    let paths = patch
        .split(|b| *b == b'\n')
        .filter(|l| l.starts_with(b"diff --git "))
        .count();
    (patch.len() > REVIEW_MAX_PATCH_BYTES || paths > REVIEW_MAX_PATHS).then(|| {
        format!(
            "the change {base}..{tip} is too large for one review packet: {} bytes in {paths} files \
             (at most {REVIEW_MAX_PATCH_BYTES} bytes and {REVIEW_MAX_PATHS} files): split the unit, \
             or judge it without `review`",
            patch.len()
        )
    })
}

/// Where the reviewer's copy of the packet goes in the worktree it reviews: under the excluded
/// `.baton/state/`, so it is never committed.
pub fn packet_in(work: &Path, unit: &str, attempt: u32) -> PathBuf {
    work.join(".baton")
        .join("state")
        .join("review")
        .join(format!("{unit}-{attempt}.patch"))
}

/// Writes a review packet: its folder made without following a link (`create_own_dir`), an
/// existing file or link at the name removed, the file created new — a link a unit's implementer
/// planted in its worktree never redirects the write.
pub fn write_packet(target: &Path, patch: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = target.parent() {
        baton_state::create_own_dir(dir)?;
    }
    match std::fs::remove_file(target) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(target)?;
    f.write_all(patch)?;
    f.sync_all()
}

/// The reviewer's task: one unit, one criterion, the packet.
pub fn reviewer_task(
    spec: &UnitSpec,
    criterion: &str,
    path: &Path,
    base: &str,
    tip: &str,
    patch: &Path,
) -> String {
    let packet = serde_json::json!({
        "base": base,
        "tip": tip,
        "patchPath": patch.display().to_string(),
    });
    let validation: Vec<String> = spec
        .validation
        .iter()
        .map(|c| format!("`{}`", c.display()))
        .collect();
    format!(
        "Review one Flow unit against one criterion. Its validation ({}) already passed and is the authority on \
         objective checks: judge only the criterion.\n\n\
         Unit `{}`: {}\n\n## Criterion\n\n{}\n\n## Review packet\n\n{packet}\n\n\
         The patch file is the exact change `base..tip` and is authoritative. You are in the unit's worktree ({}), \
         checked out at the tip; read other files only for context the patch refers to. Do not modify anything.\n\n\
         Answer with exactly `PASS` and nothing else when the change meets the criterion. Otherwise list the findings.",
        validation.join(", "),
        spec.id,
        spec.name,
        criterion.trim_end(),
        path.display()
    )
}

/// What a reviewer's answer comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Exactly `PASS`, from a reviewer that exited cleanly.
    Approved,
    /// Anything else it said; the text is what to show (the findings, and that only `PASS`
    /// approves).
    Findings(String),
    /// No answer at all: it died by a signal, or exited non-zero having said nothing.
    NoAnswer,
}

/// How a reviewer's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited 0.
    Clean,
    /// It ended otherwise but could still have answered: how (`exit code 3`, `failed`).
    Unclean(String),
    /// A signal ended it, or it never ran: whatever it printed is no answer.
    Killed,
}

/// Reads a reviewer's answer from how it ended and what it said. A reviewer that ended
/// uncleanly but said something answered: anything but an exact `PASS` from a clean exit is a
/// finding.
pub fn verdict(ended: &Ended, output: &str) -> Verdict {
    let said = !output.trim().is_empty();
    match ended {
        Ended::Killed => Verdict::NoAnswer,
        Ended::Unclean(_) if !said => Verdict::NoAnswer,
        Ended::Clean if output.trim() == "PASS" => Verdict::Approved,
        _ => {
            let how = match ended {
                Ended::Unclean(how) => format!(", {how}"),
                _ => String::new(),
            };
            Verdict::Findings(if said {
                format!("the reviewer's findings (only `PASS` approves{how}):\n{output}")
            } else {
                format!("the reviewer answered with nothing (only `PASS` approves{how})")
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_exact_pass_from_a_clean_exit_approves() {
        let exit3 = Ended::Unclean("exit code 3".into());
        assert_eq!(verdict(&Ended::Clean, " PASS\n"), Verdict::Approved);
        assert!(
            matches!(verdict(&Ended::Clean, "PASS, mostly"), Verdict::Findings(t) if t.contains("PASS, mostly"))
        );
        assert!(
            matches!(verdict(&exit3, "PASS"), Verdict::Findings(t) if t.contains(", exit code 3):\nPASS"))
        );
        assert!(
            matches!(verdict(&Ended::Clean, ""), Verdict::Findings(t) if t.contains("answered with nothing"))
        );
        assert_eq!(
            verdict(&Ended::Killed, "half a sentence"),
            Verdict::NoAnswer
        );
        assert_eq!(verdict(&exit3, "  \n"), Verdict::NoAnswer);
    }

    #[test]
    fn a_packet_over_either_limit_is_refused_with_both_figures() {
        let small = b"diff --git a/x b/x\n+1\n";
        assert_eq!(too_large(small, "a", "b"), None);
        let many = "diff --git a/x b/x\n".repeat(REVIEW_MAX_PATHS + 1);
        let why = too_large(many.as_bytes(), "a", "b").unwrap();
        assert!(
            why.contains(&format!("{} files", REVIEW_MAX_PATHS + 1)),
            "{why}"
        );
        let big = vec![b'+'; REVIEW_MAX_PATCH_BYTES + 1];
        assert!(too_large(&big, "a", "b").is_some());
    }
}
