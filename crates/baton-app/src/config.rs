//! Layered config: built-in defaults < user file < project file < `BATON_*` environment < flags.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use baton_protocol::config::Config;

/// The config files that were read, in the order they apply.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    pub config: Config,
    pub files: Vec<PathBuf>,
    /// The project file's widening keys that were ignored because the project is not trusted
    /// (`crate::trust`), as dotted names.
    pub ignored: Vec<String>,
    /// Settings a later file sets to another value than an earlier one did, so the earlier
    /// file's value is not the one that applies (a project's `[models]` over the user's own).
    pub shadowed: Vec<Shadowed>,
}

impl LoadedConfig {
    /// The files read, as text, in the order they apply (the documents' `config_files`).
    pub fn file_names(&self) -> Vec<String> {
        self.files.iter().map(|f| f.display().to_string()).collect()
    }
}

/// A setting one config file sets and a later one sets again, differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    /// The dotted key (`models.fast`, `providers.ollama.base_url`).
    pub key: String,
    /// The file whose value no longer applies.
    pub under: PathBuf,
    /// The file whose value applies.
    pub over: PathBuf,
}

impl Shadowed {
    /// One line per pair of files: "`over` sets k1, k2 again: its values apply, not those in
    /// `under`".
    pub fn lines(all: &[Shadowed]) -> Vec<String> {
        let mut pairs: Vec<(&Path, &Path, Vec<&str>)> = Vec::new();
        for s in all {
            match pairs
                .iter_mut()
                .find(|(u, o, _)| *u == s.under.as_path() && *o == s.over.as_path())
            {
                Some((_, _, keys)) => keys.push(&s.key),
                None => pairs.push((&s.under, &s.over, vec![&s.key])),
            }
        }
        pairs
            .into_iter()
            .map(|(under, over, keys)| {
                format!(
                    "{} sets {} again: its values apply, not those in {}",
                    over.display(),
                    keys.join(", "),
                    under.display()
                )
            })
            .collect()
    }
}

/// The leaf keys of `over` that `base` sets to another value, with the file that set each.
fn shadows(
    base: &toml::Table,
    over: &toml::Table,
    prefix: &str,
    setter: &std::collections::BTreeMap<String, PathBuf>,
    file: &Path,
    out: &mut Vec<Shadowed>,
) {
    for (k, v) in over {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (base.get(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => {
                shadows(b, o, &key, setter, file, out)
            }
            (Some(b), v) if b != v => {
                if let Some(under) = setter.get(&key) {
                    out.push(Shadowed {
                        key,
                        under: under.clone(),
                        over: file.to_path_buf(),
                    });
                }
            }
            _ => {}
        }
    }
}

/// Records `file` as the setter of every leaf key of `t`.
fn record_setters(
    t: &toml::Table,
    prefix: &str,
    file: &Path,
    setter: &mut std::collections::BTreeMap<String, PathBuf>,
) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(inner) => record_setters(inner, &key, file, setter),
            _ => {
                setter.insert(key, file.to_path_buf());
            }
        }
    }
}

/// `$XDG_CONFIG_HOME/baton`, else `~/.config/baton`.
pub fn user_config_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    baton_sandbox::protect::user_config_dir(home.as_deref())
}

/// Reads and checks one file; errors name the file, the line and the key.
fn read_file(path: &Path) -> Result<Option<toml::Table>> {
    let text = match baton_text::input::read_input(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    // Deserializing the file alone gives errors with its own line numbers. A required key may be
    // set by another layer (a project file that only changes `base_url`), so a missing field is
    // checked on the merged config instead.
    match toml::from_str::<Config>(&text) {
        // The values the schema cannot check, named with this file.
        Ok(config) => {
            if let Err(e) = config.check() {
                anyhow::bail!("{}: {e}", path.display());
            }
        }
        Err(e) if !e.message().starts_with("missing field") => {
            anyhow::bail!("{}: {}", path.display(), e.to_string().trim_end());
        }
        Err(_) => {}
    }
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
    Ok(Some(table))
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Removes from an untrusted project's table `over` the `kind` of every provider that `base`
/// (the user's own config) already defines, and returns their dotted names: a project may add a
/// provider (it needs a `kind`), but not change the wire format, and so the endpoint and headers
/// of the user's own (a provider of another kind sends the user's key elsewhere).
fn strip_kind_overrides(base: &toml::Table, over: &mut toml::Table) -> Vec<String> {
    let Some(ours) = base.get("providers").and_then(toml::Value::as_table) else {
        return Vec::new();
    };
    let Some(theirs) = over
        .get_mut("providers")
        .and_then(toml::Value::as_table_mut)
    else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for (name, p) in theirs.iter_mut() {
        if !ours.contains_key(name) {
            continue;
        }
        if let Some(t) = p.as_table_mut() {
            if t.remove("kind").is_some() {
                removed.push(format!("providers.{name}.kind"));
            }
        }
    }
    removed
}

/// Loads the user and project files (and `$BATON_CONFIG` when set, applied last).
pub fn load(project_root: &Path) -> Result<LoadedConfig> {
    let mut candidates = Vec::new();
    if let Some(dir) = user_config_dir() {
        candidates.push(dir.join("config.toml"));
    }
    let project_file = project_root.join(".baton").join("config.toml");
    candidates.push(project_file.clone());
    if let Some(extra) = std::env::var_os("BATON_CONFIG").filter(|v| !v.is_empty()) {
        let extra = PathBuf::from(extra);
        if !extra.is_file() {
            anyhow::bail!(
                "BATON_CONFIG names {}, which is not a file: fix the path or unset BATON_CONFIG",
                extra.display()
            );
        }
        candidates.push(extra);
    }
    let mut merged = toml::Table::new();
    let mut files = Vec::new();
    let mut ignored = Vec::new();
    let mut shadowed = Vec::new();
    let mut setter = std::collections::BTreeMap::new();
    for path in candidates {
        if let Some(mut t) = read_file(&path)? {
            // The project's own file is the repository's content: what widens what runs, or
            // where keys go, applies only once the user trusts the project.
            if path == project_file && !crate::trust::is_trusted(project_root) {
                ignored = crate::trust::strip_widening(&mut t);
                ignored.extend(strip_kind_overrides(&merged, &mut t));
            }
            shadows(&merged, &t, "", &setter, &path, &mut shadowed);
            record_setters(&t, "", &path, &mut setter);
            merge(&mut merged, t);
            files.push(path);
        }
    }
    let names = || {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        names.join(", ")
    };
    let config: Config = toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| {
            anyhow::anyhow!(
                "config (merged from {}): {}",
                names(),
                e.to_string().trim_end()
            )
        })?;
    config
        .check()
        .map_err(|e| anyhow::anyhow!("config (merged from {}): {e}", names()))?;
    let mut config = config;
    baton_model::routes::price_local_servers(&mut config);
    Ok(LoadedConfig {
        config,
        files,
        ignored,
        shadowed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_project_cannot_change_the_kind_of_the_user_s_provider() {
        let base: toml::Table = toml::from_str("[providers.openai]\nkind = \"openai\"\n").unwrap();
        let mut over: toml::Table = toml::from_str(
            "[providers.openai]\nkind = \"anthropic\"\n[providers.mine]\nkind = \"openai\"\n",
        )
        .unwrap();
        assert_eq!(
            strip_kind_overrides(&base, &mut over),
            ["providers.openai.kind"]
        );
        assert!(over["providers"]["openai"].get("kind").is_none());
        assert_eq!(over["providers"]["mine"]["kind"].as_str(), Some("openai"));
    }

    #[test]
    fn later_files_override_earlier_keys_but_keep_the_rest() {
        let mut a: toml::Table = toml::from_str(
            "[models]\nfast = \"a/x\"\nbalanced = \"a/y\"\n[providers.a]\nkind = \"openai\"\nbase_url = \"http://one\"\n",
        )
        .unwrap();
        let b: toml::Table =
            toml::from_str("[models]\nfast = \"b/x\"\n[providers.a]\nbase_url = \"http://two\"\n")
                .unwrap();
        merge(&mut a, b);
        let c: Config = toml::Value::Table(a).try_into().unwrap();
        assert_eq!(c.models.fast.unwrap().routes()[0].to_string(), "b/x");
        assert_eq!(c.models.balanced.unwrap().routes()[0].to_string(), "a/y");
        assert_eq!(c.providers["a"].base_url.as_deref(), Some("http://two"));
    }

    #[test]
    fn a_layer_may_set_one_key_of_a_table_another_layer_defines() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("config.toml");
        std::fs::write(&p, "[providers.mock]\nbase_url = \"http://x\"\n").unwrap();
        assert!(read_file(&p).unwrap().is_some());
    }

    #[test]
    fn unknown_keys_are_named_with_their_file() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("config.toml");
        std::fs::write(&p, "[agent]\nmax_turn = 3\n").unwrap();
        let e = read_file(&p).unwrap_err().to_string();
        assert!(e.contains("config.toml") && e.contains("max_turn"), "{e}");
    }

    #[test]
    fn a_later_file_that_sets_a_key_differently_is_named_with_the_one_it_shadows() {
        let (user, project) = (
            Path::new("/u/config.toml"),
            Path::new("/p/.baton/config.toml"),
        );
        let a: toml::Table = toml::from_str(
            "[models]\nfast = \"a/x\"\nbalanced = \"a/y\"\n[providers.a]\nkind = \"openai\"\n",
        )
        .unwrap();
        let b: toml::Table = toml::from_str(
            "[models]\nfast = \"b/x\"\nbalanced = \"a/y\"\nfrontier = \"b/z\"\n[providers.a]\nkind = \"openai\"\n",
        )
        .unwrap();
        let mut setter = std::collections::BTreeMap::new();
        record_setters(&a, "", user, &mut setter);
        let mut out = Vec::new();
        shadows(&a, &b, "", &setter, project, &mut out);
        // Only the key set to another value: the same value, or a key only the project sets,
        // shadows nothing.
        assert_eq!(
            out,
            [Shadowed {
                key: "models.fast".into(),
                under: user.into(),
                over: project.into(),
            }]
        );
        assert_eq!(
            Shadowed::lines(&out),
            ["/p/.baton/config.toml sets models.fast again: its values apply, not those in /u/config.toml"]
        );
    }
}
