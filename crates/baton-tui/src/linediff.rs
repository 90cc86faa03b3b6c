//! An edit's old and new text as a line diff: what was removed (`-`, numbered as the file was),
//! what was added (`+`, numbered as the file is), and one unchanged line of context (` `) on
//! each side of every change. The lines the model repeated to place its edit are context, not a
//! removal and an addition.

/// One line of the diff: its sign (`-`, `+` or ` `), its line number in the file when known,
/// and its text.
pub type DiffLine = (char, Option<usize>, String);

/// Past this many lines on either side the texts are shown whole, removed then added (the
/// common-subsequence table grows with the product of the two).
const MOST: usize = 400;

/// How many unchanged lines are kept next to a change.
const CONTEXT: usize = 1;

/// The diff of `old` into `new`, which begin at line `at` of the file (when known).
pub fn diff(old: &str, new: &str, at: Option<usize>) -> Vec<DiffLine> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let number = |k: usize| at.map(|n| n + k);
    if a.len() > MOST || b.len() > MOST {
        let mut out: Vec<DiffLine> = a
            .iter()
            .enumerate()
            .map(|(k, l)| ('-', number(k), (*l).to_string()))
            .collect();
        out.extend(
            b.iter()
                .enumerate()
                .map(|(k, l)| ('+', number(k), (*l).to_string())),
        );
        return out;
    }
    // The longest common subsequence, as a table of suffix lengths.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut all: Vec<DiffLine> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            all.push((' ', number(j), a[i].to_string()));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // A removal comes before the addition that replaces it.
            all.push(('-', number(i), a[i].to_string()));
            i += 1;
        } else {
            all.push(('+', number(j), b[j].to_string()));
            j += 1;
        }
    }
    // Unchanged lines are kept only next to a change.
    let changed: Vec<usize> = (0..all.len()).filter(|&k| all[k].0 != ' ').collect();
    all.into_iter()
        .enumerate()
        .filter(|(k, l)| l.0 != ' ' || changed.iter().any(|&c| c.abs_diff(*k) <= CONTEXT))
        .map(|(_, l)| l)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signs(d: &[DiffLine]) -> String {
        d.iter().map(|l| l.0).collect()
    }

    #[test]
    fn lines_the_edit_repeats_are_context_and_numbered_as_in_the_file() {
        let old = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
        let new = "fn main() {\n    let x = 2;\n    println!(\"{x}\");\n}\n";
        let d = diff(old, new, Some(10));
        assert_eq!(signs(&d), " -+ ");
        assert_eq!(d[0], (' ', Some(10), "fn main() {".into()));
        assert_eq!(d[1], ('-', Some(11), "    let x = 1;".into()));
        assert_eq!(d[2], ('+', Some(11), "    let x = 2;".into()));
        assert_eq!(d[3].1, Some(12));
    }

    #[test]
    fn only_one_unchanged_line_is_kept_beside_each_change() {
        let old = "a\nb\nc\nd\ne\nf\ng\n";
        let new = "a\nb\nc\nD\ne\nf\ng\n";
        let d = diff(old, new, None);
        let texts: Vec<&str> = d.iter().map(|l| l.2.as_str()).collect();
        assert_eq!(texts, ["c", "d", "D", "e"]);
        assert!(d.iter().all(|l| l.1.is_none()));
    }

    #[test]
    fn added_and_removed_lines_keep_their_own_numbers() {
        let d = diff("one\ntwo\n", "one\nnew\ntwo\n", Some(1));
        assert_eq!(signs(&d), " + ");
        assert_eq!(d[1], ('+', Some(2), "new".into()));
        assert_eq!(d[2], (' ', Some(3), "two".into()));
        let d = diff("one\nold\ntwo\n", "one\ntwo\n", Some(1));
        assert_eq!(signs(&d), " - ");
        assert_eq!(d[1], ('-', Some(2), "old".into()));
    }

    #[test]
    fn a_huge_edit_is_shown_whole_removed_then_added() {
        let old = "x\n".repeat(MOST + 1);
        let d = diff(&old, "y\n", Some(1));
        assert_eq!(d.len(), MOST + 2);
        assert_eq!(d.last().map(|l| l.0), Some('+'));
    }
}
