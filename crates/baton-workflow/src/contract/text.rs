//! Finding the pieces of a contract in an agent's output: the envelope, the status heading, the
//! fenced router contract, `KEY: value` lines, `###` sections and `file:line` locations.

use serde_json::{Map, Value};

/// How many lines from the top a status heading may sit.
pub(crate) const HEADING_WINDOW: usize = 5;

/// The output's lines, numbered from 1, with a leading byte-order mark dropped.
pub(crate) fn numbered(output: &str) -> impl Iterator<Item = (usize, &str)> {
    output
        .strip_prefix('\u{feff}')
        .unwrap_or(output)
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
}

/// The first line that is not blank: "line 1" of the contract dialect. Blank lines before it
/// are tolerated, since models often open with an empty line.
pub(crate) fn first_line(output: &str) -> Option<(usize, &str)> {
    numbered(output).find(|(_, l)| !l.trim().is_empty())
}

/// The raw fields of a `CONTRACT {…}` envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Envelope {
    pub status: String,
    pub blocking: Option<bool>,
    /// `cr`: the number of critical issues.
    pub critical: Option<u64>,
    /// `bf`: the number of blocking findings (plan-gap-reviewer).
    pub blocking_findings: Option<u64>,
}

/// Whether a line is an attempt at an envelope at all.
pub(crate) fn is_envelope_line(line: &str) -> bool {
    let t = line.trim().trim_matches('`').trim_start();
    t.strip_prefix("CONTRACT")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '{', '\t']))
}

/// Parses an envelope line. `Err` says what is wrong with it.
pub(crate) fn parse_envelope(line: &str) -> Result<Envelope, String> {
    let t = line.trim().trim_matches('`').trim();
    let body = t
        .strip_prefix("CONTRACT")
        .map(str::trim)
        .ok_or("the line does not start with CONTRACT")?;
    if body.is_empty() {
        return Err("no JSON object after CONTRACT".into());
    }
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("the JSON does not parse: {e}"))?;
    let Value::Object(map) = value else {
        return Err("the envelope is not a JSON object".into());
    };
    let status = match map.get("s") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(_) => return Err("\"s\" must be a non-empty string".into()),
        None => return Err("\"s\" (the status) is missing".into()),
    };
    let blocking = match map.get("b") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err("\"b\" must be true or false".into()),
    };
    let count = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or(format!("\"{key}\" must be a whole number of at least 0")),
    };
    Ok(Envelope {
        status,
        blocking,
        critical: count("cr")?,
        blocking_findings: count("bf")?,
    })
}

/// The line number of the first envelope below line 1, if any.
pub(crate) fn later_envelope(output: &str, first: usize) -> Option<usize> {
    numbered(output)
        .filter(|(n, _)| *n > first)
        .find(|(_, l)| is_envelope_line(l))
        .map(|(n, _)| n)
}

/// The status after `## {title}:` in the first [`HEADING_WINDOW`] lines, with its line number.
pub(crate) fn status_heading(output: &str, title: &str) -> Option<(usize, String)> {
    numbered(output).take(HEADING_WINDOW).find_map(|(n, line)| {
        let rest = line.trim().strip_prefix("##")?;
        if rest.starts_with('#') {
            return None;
        }
        let (head, status) = rest.split_once(':')?;
        head.trim()
            .eq_ignore_ascii_case(title)
            .then(|| (n, status.trim().trim_matches('*').trim().to_string()))
    })
}

/// Upper case with spaces and hyphens as underscores: `Changes Requested` → `CHANGES_REQUESTED`.
pub(crate) fn status_word(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| match c {
            ' ' | '-' => '_',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

/// Where the router contract heading and its block failed to appear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BlockError {
    /// No `### Router Contract` heading at all.
    NoHeading,
    /// The heading is there but no fenced block follows it.
    NoFence { heading_line: usize },
    /// The fence opened on this line never closes.
    Unclosed { line: usize },
}

fn is_router_contract_heading(line: &str) -> bool {
    let t = line.trim_start();
    let hashes = t.chars().take_while(|c| *c == '#').count();
    (2..=4).contains(&hashes)
        && t[hashes..]
            .trim()
            .to_ascii_lowercase()
            .starts_with("router contract")
}

/// The YAML text of the fenced block under the last `### Router Contract` heading.
pub(crate) fn router_contract_block(output: &str) -> Result<String, BlockError> {
    let lines: Vec<(usize, &str)> = numbered(output).collect();
    let heading = lines
        .iter()
        .rposition(|(_, l)| is_router_contract_heading(l))
        .ok_or(BlockError::NoHeading)?;
    let heading_line = lines[heading].0;
    let open = lines[heading + 1..]
        .iter()
        .position(|(_, l)| l.trim_start().starts_with("```"))
        .map(|i| heading + 1 + i)
        .ok_or(BlockError::NoFence { heading_line })?;
    let info = lines[open].1.trim_start().trim_start_matches('`').trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("yaml") || info.eq_ignore_ascii_case("yml")) {
        return Err(BlockError::NoFence { heading_line });
    }
    let close = lines[open + 1..]
        .iter()
        .position(|(_, l)| l.trim() == "```")
        .map(|i| open + 1 + i)
        .ok_or(BlockError::Unclosed {
            line: lines[open].0,
        })?;
    Ok(lines[open + 1..close]
        .iter()
        .map(|(_, l)| *l)
        .collect::<Vec<_>>()
        .join("\n"))
}

/// Parses router contract YAML into a mapping of its fields.
pub(crate) fn yaml_mapping(yaml: &str) -> Result<Map<String, Value>, String> {
    let value: Value = serde_norway::from_str(yaml).map_err(|e| e.to_string())?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Err("the block is empty".into()),
        other => Err(format!(
            "the block is a {}, not a mapping of FIELD: value",
            kind(&other)
        )),
    }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "mapping",
    }
}

/// `KEY: value` lines in prose (`REMEDIATION_NEEDED: true`, `- **SCENARIOS_TOTAL:** 3`), with
/// values read as booleans, whole numbers or text. The first occurrence of a key wins; lines
/// inside fenced blocks are skipped.
pub(crate) fn key_lines(output: &str) -> Map<String, Value> {
    let mut map = Map::new();
    let mut in_fence = false;
    for (_, line) in numbered(output) {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let t = line.trim_start().trim_start_matches(['-', '*', '>', ' ']);
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_matches('*').trim();
        let well_formed = key.len() >= 2
            && key.starts_with(|c: char| c.is_ascii_uppercase())
            && key
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !well_formed || map.contains_key(key) {
            continue;
        }
        let value = value.trim().trim_start_matches('*').trim();
        map.insert(key.to_string(), scalar(value));
    }
    map
}

fn scalar(s: &str) -> Value {
    let unquoted = s.trim_matches('`');
    match unquoted.to_ascii_lowercase().as_str() {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        "" | "null" | "~" => return Value::Null,
        _ => {}
    }
    match unquoted.parse::<u64>() {
        Ok(n) => Value::from(n),
        Err(_) => Value::String(unquoted.to_string()),
    }
}

/// The lines under the first `##`/`###` heading whose title starts with `title` (any case), up
/// to the next heading of any level; `None` when there is no such heading.
pub(crate) fn section<'a>(output: &'a str, title: &str) -> Option<Vec<&'a str>> {
    let title = title.to_ascii_lowercase();
    let mut lines = numbered(output).map(|(_, l)| l);
    lines.by_ref().find(|l| {
        let t = l.trim_start();
        let hashes = t.chars().take_while(|c| *c == '#').count();
        (2..=4).contains(&hashes) && t[hashes..].trim().to_ascii_lowercase().starts_with(&title)
    })?;
    Some(
        lines
            .take_while(|l| !l.trim_start().starts_with('#'))
            .collect(),
    )
}

fn list_item(line: &str) -> Option<&str> {
    let t = line.trim();
    ["- ", "* ", "+ "]
        .iter()
        .find_map(|m| t.strip_prefix(m))
        .or_else(|| {
            let digits = t.chars().take_while(char::is_ascii_digit).count();
            (digits > 0)
                .then(|| t[digits..].strip_prefix(". "))
                .flatten()
        })
}

/// The items of a Markdown list (`-`, `*` or `1.`), each with its indented continuation lines
/// folded in; other prose between the items is not an item. Lines of a section with no list
/// markers at all are one item each.
pub(crate) fn list_items(lines: &[&str]) -> Vec<String> {
    let nonblank = lines.iter().map(|l| l.trim()).filter(|t| !t.is_empty());
    if !lines.iter().any(|l| list_item(l).is_some()) {
        return nonblank.map(str::to_string).collect();
    }
    let mut items: Vec<String> = Vec::new();
    let mut open = false;
    for line in lines {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        match list_item(line) {
            Some(item) => {
                items.push(item.trim().to_string());
                open = true;
            }
            None if open && line.starts_with([' ', '\t']) => {
                if let Some(last) = items.last_mut() {
                    last.push(' ');
                    last.push_str(t);
                }
            }
            None => open = false,
        }
    }
    items
}

/// A `path:line` location in source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// Every `path:line` token of a text, in order (`src/a.rs:12`, `` `lib/x.ts:3:7` ``,
/// `(app.py:40-44)`). The path needs a `/` or a `.`; URLs are not locations.
pub(crate) fn locations(text: &str) -> Vec<Location> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '(' | ')' | '[' | ']' | '"'))
        .filter_map(location)
        .collect()
}

fn location(token: &str) -> Option<Location> {
    let token = token.trim_matches(|c: char| matches!(c, ',' | ';' | '\'' | '*' | '<' | '>'));
    let token = token.strip_suffix([':', '.']).unwrap_or(token);
    if token.contains("://") {
        return None;
    }
    let mut parts = token.split(':');
    let file = parts
        .next()?
        .strip_prefix("./")
        .unwrap_or(token.split(':').next()?);
    let line_part = parts.next()?;
    let digits: String = line_part.chars().take_while(char::is_ascii_digit).collect();
    let rest = &line_part[digits.len()..];
    let path_like = !file.is_empty()
        && (file.contains('/') || file.contains('.'))
        && !file.ends_with('.')
        && file
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '@' | '+'));
    if !path_like || digits.is_empty() || !(rest.is_empty() || rest.starts_with('-')) {
        return None;
    }
    Some(Location {
        file: file.to_string(),
        line: digits.parse().ok()?,
    })
}
