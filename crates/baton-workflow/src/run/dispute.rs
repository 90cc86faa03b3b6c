//! cc10x's `FINDING_DISPUTED`: a remediation may dispute a finding instead of applying it, but
//! only with a command whose output proves the finding false. The host runs that command itself;
//! the independent verifier rules on each dispute (`DISPUTE_UPHELD` / `DISPUTE_REJECTED`), never
//! the reviewer who raised it. A dispute with no command is void (the finding stands), one the
//! verifier does not rule on, or rules against while passing, stops the workflow.

pub use crate::results::Dispute;

/// The disputes recorded under `results.disputes`.
pub fn recorded(a: &crate::artifact::Artifact) -> Vec<Dispute> {
    a.results.disputes.clone()
}

/// Records `disputes` under `results.disputes`.
pub fn record(a: &mut crate::artifact::Artifact, disputes: &[Dispute]) {
    a.results.disputes = disputes.to_vec();
}

/// The disputes in a fix agent's report: each `FINDING_DISPUTED:` line with the
/// `VERIFY_COMMAND:` and `VERIFY_OUTPUT:` lines after it (before the next dispute).
pub fn parse(task: &str, text: &str) -> Vec<Dispute> {
    let mut out: Vec<Dispute> = Vec::new();
    for line in text.lines() {
        let l = line
            .trim()
            .trim_start_matches("- ")
            .trim_matches('*')
            .trim();
        let value = |key: &str| {
            l.strip_prefix(key)
                .map(|v| v.trim().trim_matches('`').trim().to_string())
                .filter(|v| !v.is_empty() && v != "null" && v != "N/A")
        };
        if let Some(f) = value("FINDING_DISPUTED:") {
            out.push(Dispute {
                task: task.to_string(),
                finding: f,
                status: "pending".into(),
                ..Dispute::default()
            });
        } else if let (Some(c), Some(d)) = (value("VERIFY_COMMAND:"), out.last_mut()) {
            d.command.get_or_insert(c);
        } else if let (Some(o), Some(d)) = (value("VERIFY_OUTPUT:"), out.last_mut()) {
            d.claimed_output.get_or_insert(o);
        }
    }
    for d in &mut out {
        if d.command.is_none() {
            d.status = "void".into();
        }
    }
    out
}

/// The verifier's rulings: (`true` upheld / `false` rejected, the finding it names).
pub fn rulings(text: &str) -> Vec<(bool, String)> {
    text.lines()
        .filter_map(|line| {
            let l = line
                .trim()
                .trim_start_matches("- ")
                .trim_matches('*')
                .trim();
            if let Some(f) = l.strip_prefix("DISPUTE_UPHELD:") {
                Some((true, f.trim().to_string()))
            } else {
                l.strip_prefix("DISPUTE_REJECTED:")
                    .map(|f| (false, f.trim().to_string()))
            }
        })
        .collect()
}

/// Applies the verifier's rulings to the pending disputes: a ruling names its dispute by its
/// finding (either text containing the other, in any case); one pending dispute takes the one
/// ruling there is.
pub fn rule(disputes: &mut [Dispute], rulings: &[(bool, String)], verifier: &str) {
    let pending: Vec<usize> = (0..disputes.len())
        .filter(|i| disputes[*i].status == "pending")
        .collect();
    for (upheld, named) in rulings {
        let named_l = named.to_lowercase();
        let hit = pending.iter().copied().find(|i| {
            let f = disputes[*i].finding.to_lowercase();
            !named_l.is_empty() && (f.contains(&named_l) || named_l.contains(&f))
        });
        let hit = hit.or((pending.len() == 1 && rulings.len() == 1).then(|| pending[0]));
        if let Some(i) = hit {
            disputes[i].status = if *upheld { "upheld" } else { "rejected" }.into();
            disputes[i].ruled_by = Some(verifier.to_string());
        }
    }
}

/// The verifier's `## Disputed Findings` section, when disputes wait for it.
pub fn prompt_section(disputes: &[Dispute]) -> Option<String> {
    let pending: Vec<&Dispute> = disputes.iter().filter(|d| d.status == "pending").collect();
    if pending.is_empty() {
        return None;
    }
    let mut s = String::from(
        "## Disputed Findings\nThe fix agent disputes these findings instead of applying them. You rule on each, from the evidence: run its command yourself. Write `DISPUTE_UPHELD: <finding>` when the output proves the finding false, else `DISPUTE_REJECTED: <finding>` — then the finding stands and your verdict is FAIL until it is fixed.\n",
    );
    for d in pending {
        s.push_str(&format!(
            "- {}\n  - command: `{}`\n  - the fix agent's output: {}\n  - baton's own run: {}\n",
            d.finding,
            d.command.as_deref().unwrap_or(""),
            d.claimed_output.as_deref().unwrap_or("(none given)"),
            match d.host_exit_code {
                Some(c) => format!("exit {c}"),
                None => "did not finish".into(),
            }
        ));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disputes_need_a_command_and_are_ruled_by_the_verifier() {
        let report = "Fixed one, disputed two.\nFINDING_DISPUTED: the nil check in parse() is missing\nVERIFY_COMMAND: `grep -n 'is_none' src/parse.rs`\nVERIFY_OUTPUT: 12: if x.is_none() {\nADJUDICATOR: integration-verifier\n- FINDING_DISPUTED: the name is unclear\n";
        let mut d = parse("t7", report);
        assert_eq!(d.len(), 2);
        assert_eq!(
            d[0].command.as_deref(),
            Some("grep -n 'is_none' src/parse.rs")
        );
        assert_eq!(d[0].claimed_output.as_deref(), Some("12: if x.is_none() {"));
        assert_eq!(d[0].status, "pending");
        assert_eq!(d[1].status, "void", "no command: the finding stands");
        assert!(prompt_section(&d).unwrap().contains(
            "- the nil check in parse() is missing\n  - command: `grep -n 'is_none' src/parse.rs`"
        ));
        rule(
            &mut d,
            &rulings("DISPUTE_UPHELD: the nil check in parse()\n"),
            "t9",
        );
        assert_eq!(d[0].status, "upheld");
        assert!(prompt_section(&d).is_none());
        let mut one = parse("t8", "FINDING_DISPUTED: x\nVERIFY_COMMAND: true\n");
        rule(
            &mut one,
            &rulings("- DISPUTE_REJECTED: something else entirely"),
            "t9",
        );
        assert_eq!(one[0].status, "rejected", "one pending, one ruling");
    }
}
