//! Secrets out of text: every provider key a process knows becomes [`REDACTED`] in what it writes
//! or prints.
//!
//! A [`Redactor`] holds the secret values. A process installs one with [`install`] as soon as it
//! knows its keys (`baton` does when it has read the config); the writers that put text on disk
//! or on a terminal (the JSONL log, snapshots, cassettes, the CLI's output) pass it through
//! [`redact`], which changes nothing while no redactor is installed. [`RedactStream`] does the
//! same for text that arrives in pieces, so a key split between two pieces is still caught.
//!
//! Values shorter than [`MIN_SECRET_CHARS`] characters are not redacted: a short value (`1`,
//! `true`, `local`) is not a credential, and replacing it everywhere would mangle ordinary text.

use std::borrow::Cow;
use std::sync::OnceLock;

/// What stands where a secret was.
pub const REDACTED: &str = "[REDACTED]";

/// The fewest characters (after trimming) a value needs to be redacted.
pub const MIN_SECRET_CHARS: usize = 8;

/// Replaces known secret values with [`REDACTED`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// The values and their JSON-escaped forms, longest first, so a secret holding another is
    /// replaced whole.
    needles: Vec<String>,
}

impl Redactor {
    /// A redactor of `secrets`, trimmed; values shorter than [`MIN_SECRET_CHARS`] are left out.
    /// A value that JSON escapes differently (it holds `"` or `\`) is also redacted in that form,
    /// so it is caught in a serialized line too.
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Redactor {
        let mut needles = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref().trim();
            if secret.chars().count() < MIN_SECRET_CHARS {
                continue;
            }
            let escaped = secret.replace('\\', "\\\\").replace('"', "\\\"");
            if escaped != secret {
                needles.push(escaped);
            }
            needles.push(secret.to_string());
        }
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        needles.dedup();
        Redactor { needles }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when it holds none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for needle in &self.needles {
            if out.contains(needle.as_str()) {
                out = Cow::Owned(out.replace(needle.as_str(), REDACTED));
            }
        }
        out
    }

    /// The length of the longest end of `text` that is the start of a secret (but not a whole
    /// one): what a stream must hold back until it knows how the text goes on.
    fn partial_tail(&self, text: &str) -> usize {
        let mut longest = 0;
        for needle in &self.needles {
            let most = (needle.len() - 1).min(text.len());
            for len in (longest + 1..=most).rev() {
                if needle.is_char_boundary(len) && text.ends_with(&needle[..len]) {
                    longest = len;
                    break;
                }
            }
        }
        longest
    }
}

/// Redacts a text that arrives in pieces (a streamed answer): what [`RedactStream::push`] returns
/// holds no secret, even one split between pieces, and all of it, followed by what
/// [`RedactStream::finish`] returns, is the whole text redacted.
#[derive(Debug, Clone, Default)]
pub struct RedactStream {
    /// Text received but not returned yet: the start of what may be a secret.
    pending: String,
}

impl RedactStream {
    /// The redacted text that can be shown now; the end of `piece` that may begin a secret is
    /// held back.
    pub fn push(&mut self, redactor: &Redactor, piece: &str) -> String {
        self.pending.push_str(piece);
        if redactor.is_empty() {
            return std::mem::take(&mut self.pending);
        }
        let mut text = redactor.redact(&self.pending).into_owned();
        let held = redactor.partial_tail(&text);
        self.pending = text.split_off(text.len() - held);
        text
    }

    /// What was held back: the stream ended, so it is no secret's start.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

static INSTALLED: OnceLock<Redactor> = OnceLock::new();
static NONE: Redactor = Redactor {
    needles: Vec::new(),
};

/// Makes `redactor` the one [`redact`] uses in this process. Only the first call counts: it
/// returns false, and changes nothing, once one is installed.
pub fn install(redactor: Redactor) -> bool {
    INSTALLED.set(redactor).is_ok()
}

/// The installed redactor, or one that redacts nothing.
pub fn installed() -> &'static Redactor {
    INSTALLED.get().unwrap_or(&NONE)
}

/// `text` through the installed redactor.
pub fn redact(text: &str) -> Cow<'_, str> {
    installed().redact(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn replaces_every_secret_and_leaves_short_values_alone() {
        let r = Redactor::new(["sk-live-0123456789", "  tok-abcdefgh \n", "short12", ""]);
        assert_eq!(
            r.redact("401: bad key sk-live-0123456789 (tok-abcdefgh, short12)"),
            "401: bad key [REDACTED] ([REDACTED], short12)"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(Redactor::new(["1234567"]).is_empty());
        assert!(!Redactor::new(["12345678"]).is_empty());
    }

    #[test]
    fn a_secret_holding_another_is_replaced_whole() {
        let r = Redactor::new(["abcdefgh", "abcdefgh-longer"]);
        assert_eq!(
            r.redact("abcdefgh-longer abcdefgh"),
            "[REDACTED] [REDACTED]"
        );
    }

    #[test]
    fn json_escaped_forms_are_caught() {
        let r = Redactor::new([r#"pa"ss\word-123"#]);
        let line = r#"{"message":"bad key pa\"ss\\word-123"}"#;
        assert_eq!(r.redact(line), r#"{"message":"bad key [REDACTED]"}"#);
        assert_eq!(r.redact(r#"raw pa"ss\word-123"#), "raw [REDACTED]");
    }

    #[test]
    fn a_stream_catches_a_secret_split_between_pieces() {
        let r = Redactor::new(["sk-0123456789"]);
        let mut s = RedactStream::default();
        let mut out = String::new();
        for piece in ["key: sk-01", "234", "56789 and sk-", "0x done"] {
            let shown = s.push(&r, piece);
            assert!(!shown.contains("sk-01"), "{shown:?}");
            out.push_str(&shown);
        }
        out.push_str(&s.finish());
        assert_eq!(out, "key: [REDACTED] and sk-0x done");
        // Nothing is held back when nothing could start a secret.
        assert_eq!(s.push(&r, "plain text"), "plain text");
        let mut none = RedactStream::default();
        assert_eq!(none.push(&Redactor::default(), "sk-0123"), "sk-0123");
    }

    #[test]
    fn multibyte_secrets_are_held_back_on_char_boundaries() {
        let r = Redactor::new(["ключ-секрет-1"]);
        let mut s = RedactStream::default();
        let first = s.push(&r, "a ключ-се");
        assert_eq!(first, "a ");
        assert_eq!(s.push(&r, "крет-1!"), "[REDACTED]!");
        assert_eq!(s.finish(), "");
    }
}
