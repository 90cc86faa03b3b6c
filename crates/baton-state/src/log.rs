//! The durable JSONL log and snapshots.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::damage::Damage;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{}: no such log", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: the log exists already", path.display())]
    Exists { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A snapshot that is not JSON of the expected shape.
    #[error("{}: line {line} cannot be read: {source}", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    /// A log that holds what no crash leaves: see [`crate::damage`].
    #[error("{0}")]
    Damaged(Box<Damage>),
    #[error("{}: cannot encode a record: {source}", path.display())]
    Encode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl LogError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            LogError::NotFound { path }
            | LogError::Exists { path }
            | LogError::Io { path, .. }
            | LogError::Corrupt { path, .. }
            | LogError::Encode { path, .. } => path,
            LogError::Damaged(d) => &d.path,
        }
    }

    /// The damage, when this is one.
    pub fn damage(&self) -> Option<&Damage> {
        match self {
            LogError::Damaged(d) => Some(d),
            _ => None,
        }
    }
}

impl From<Box<Damage>> for LogError {
    fn from(d: Box<Damage>) -> Self {
        LogError::Damaged(d)
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LogError + '_ {
    move |source| LogError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How far [`JsonlLog::append`] pushes a line before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Written and fsynced (`fdatasync`): the line survives a crash of the machine. For logs whose
    /// lines are promises acted upon (Flow, background tasks, workflows).
    Fsync,
    /// Written to the operating system only: the line survives the process being killed, not the
    /// machine losing power. For transcripts, whose torn or lost tail is repaired on open.
    Written,
}

/// A line a [`JsonlLog`] of this process appended: where (the log's path and the byte offset at
/// which the line starts) and the line itself (without its `\n`). Published on [`appended`]
/// once the line is written (and fsynced when the log's durability asks for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub path: PathBuf,
    pub offset: u64,
    pub line: std::sync::Arc<str>,
}

/// The in-process fan-out of every line appended to a [`JsonlLog`] by this process: the same
/// lines, at the same offsets, that a reader of the files sees, without reading them back.
/// Publishing costs nothing while no one subscribes.
pub fn appended() -> &'static baton_protocol::EventBus<Appended> {
    static BUS: std::sync::OnceLock<baton_protocol::EventBus<Appended>> =
        std::sync::OnceLock::new();
    BUS.get_or_init(baton_protocol::EventBus::new)
}

/// An append-only log of `E`s, one JSON value per line.
///
/// A line is complete when it ends with `\n`. A process killed mid-write leaves an incomplete
/// last line: readers ignore it and [`JsonlLog::open`] cuts it off before appending, so every
/// append starts a line of its own. Anything else that does not read (a line that does not
/// parse, NUL or control bytes, in a complete line or the last one) is [`LogError::Damaged`],
/// and nothing is cut.
#[derive(Debug)]
pub struct JsonlLog<E> {
    file: File,
    path: PathBuf,
    durability: Durability,
    _records: PhantomData<fn(&E)>,
}

impl<E: Serialize + DeserializeOwned> JsonlLog<E> {
    /// Creates a new, empty log (its folder too); fails with [`LogError::Exists`] if there is one.
    pub fn create(path: &Path, durability: Durability) -> Result<Self, LogError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::create_own_dir(dir).map_err(io(dir))?;
        let file = match OpenOptions::new().create_new(true).append(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(LogError::Exists {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => return Err(io(path)(e)),
        };
        if durability == Durability::Fsync {
            sync_dir(dir);
        }
        Ok(JsonlLog {
            file,
            path: path.to_path_buf(),
            durability,
            _records: PhantomData,
        })
    }

    /// Opens an existing log for appending and returns what it holds. An incomplete last line is
    /// cut off (and the cut made durable) first.
    pub fn open(path: &Path, durability: Durability) -> Result<(Self, Vec<E>), LogError> {
        let (log, bytes) = Self::open_bytes(path, durability)?;
        let records = parse_records(path, &bytes, None)?;
        Ok((log, records))
    }

    /// [`JsonlLog::open`] without parsing: the log and its complete lines as bytes, for a reader
    /// that parses them itself ([`parse_records`]). Lines holding what no crash leaves are
    /// [`LogError::Damaged`] before anything is cut.
    pub fn open_bytes(path: &Path, durability: Durability) -> Result<(Self, Vec<u8>), LogError> {
        let mut bytes = read_bytes(path)?;
        let complete = crate::damage::lines(path, &bytes)?.complete_len;
        let log = Self::open_read(path, durability, &bytes)?;
        bytes.truncate(complete);
        Ok((log, bytes))
    }

    /// Opens the log at `path` for appending without reading what it holds, for a writer that
    /// appends to a long log often (a worker's, whose answers make it long): when the log ends
    /// with a whole line, only its last byte is read. A log that ends with an unfinished line
    /// (a crash mid-write) is opened as [`JsonlLog::open_bytes`] does, so the torn line is
    /// checked and cut the same way. Damage further up is not looked for here; the readers
    /// report it.
    pub fn open_append(path: &Path, durability: Durability) -> Result<Self, LogError> {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LogError::NotFound {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => return Err(io(path)(e)),
        };
        let len = file.metadata().map_err(io(path))?.len();
        let mut last = [0u8; 1];
        if len > 0 {
            file.seek(SeekFrom::Start(len - 1)).map_err(io(path))?;
            file.read_exact(&mut last).map_err(io(path))?;
        }
        if len > 0 && last[0] != b'\n' {
            return Ok(Self::open_bytes(path, durability)?.0);
        }
        Self::open_read(path, durability, b"")
    }

    /// Opens for appending the log at `path` whose content, `bytes`, the caller has just read and
    /// checked while nothing else writes it (under its lock): a torn last line is cut off (and
    /// the cut made durable) first.
    pub fn open_read(path: &Path, durability: Durability, bytes: &[u8]) -> Result<Self, LogError> {
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(io(path))?;
        if complete < bytes.len() {
            file.set_len(complete as u64).map_err(io(path))?;
            file.sync_all().map_err(io(path))?;
        }
        Ok(JsonlLog {
            file,
            path: path.to_path_buf(),
            durability,
            _records: PhantomData,
        })
    }

    /// Every complete record of the log at `path`, without opening it for writing.
    pub fn read(path: &Path) -> Result<Vec<E>, LogError> {
        let bytes = read_bytes(path)?;
        parse_records(path, &bytes, None)
    }

    /// [`JsonlLog::read`] of a log whose records carry a sequence number (`seq`), checked to
    /// count 1, 2, 3, …
    pub fn read_sequenced(path: &Path, seq: fn(&E) -> u64) -> Result<Vec<E>, LogError> {
        let bytes = read_bytes(path)?;
        parse_records(path, &bytes, Some(seq))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as one line, known secrets redacted ([`baton_text::redact`]); with
    /// [`Durability::Fsync`] it is on disk when this returns.
    pub fn append(&mut self, record: &E) -> Result<(), LogError> {
        let mut line = encode(&self.path, record, serde_json::to_string)?;
        line.push('\n');
        // One write call per line: appends of concurrent writers never interleave within a line.
        self.file
            .write_all(line.as_bytes())
            .map_err(io(&self.path))?;
        if self.durability == Durability::Fsync {
            self.file.sync_data().map_err(io(&self.path))?;
        }
        self.publish(&line);
        Ok(())
    }

    /// Hands the lines of `text` (just written, ending at the file's offset) to [`appended`].
    fn publish(&mut self, text: &str) {
        let bus = appended();
        if bus.subscribers() == 0 {
            return;
        }
        use std::io::Seek;
        // The offset of this descriptor is the end of this write (O_APPEND), whatever other
        // processes append after it.
        let Ok(end) = self.file.stream_position() else {
            return;
        };
        let mut offset = end.saturating_sub(text.len() as u64);
        for line in text.split_inclusive('\n') {
            bus.publish(&Appended {
                path: self.path.clone(),
                offset,
                line: line.trim_end_matches('\n').into(),
            });
            offset += line.len() as u64;
        }
    }
}

impl<E: Serialize + DeserializeOwned> JsonlLog<E> {
    /// Appends `records` as consecutive lines in one write (and one fsync with
    /// [`Durability::Fsync`]): a process killed while appending leaves all of them or none, for
    /// records that only make sense together. (A machine losing power can still keep a prefix.)
    pub fn append_all(&mut self, records: &[E]) -> Result<(), LogError> {
        let mut text = String::new();
        for r in records {
            text.push_str(&encode(&self.path, r, serde_json::to_string)?);
            text.push('\n');
        }
        if text.is_empty() {
            return Ok(());
        }
        self.file
            .write_all(text.as_bytes())
            .map_err(io(&self.path))?;
        if self.durability == Durability::Fsync {
            self.file.sync_data().map_err(io(&self.path))?;
        }
        self.publish(&text);
        Ok(())
    }
}

/// `value` as JSON text with every known secret redacted: nothing baton keeps on disk holds a
/// provider key.
fn encode<T: Serialize>(
    path: &Path,
    value: &T,
    to_text: fn(&T) -> serde_json::Result<String>,
) -> Result<String, LogError> {
    let text = to_text(value).map_err(|source| LogError::Encode {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(match baton_text::redact::redact(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(redacted) => redacted,
    })
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, LogError> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(LogError::NotFound {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(io(path)(e)),
    }
}

/// The records of `bytes`, the content of the log at `path`: a torn last line is left out;
/// a line that does not parse, NUL or control bytes, or (with `seq`) records whose sequence
/// numbers do not count 1, 2, 3, … are [`LogError::Damaged`].
pub fn parse_records<E: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
    seq: Option<fn(&E) -> u64>,
) -> Result<Vec<E>, LogError> {
    let lines = crate::damage::lines(path, bytes)?;
    let mut records = Vec::with_capacity(lines.lines.len());
    for line in &lines.lines {
        match serde_json::from_slice(line.bytes) {
            Ok(r) => records.push(r),
            Err(e) => return Err(lines.unreadable(line, e).into()),
        }
    }
    if let Some(seq) = seq {
        lines.check_sequence(records.iter().map(seq))?;
    }
    Ok(records)
}

/// Makes a new or renamed entry of `dir` durable. Best effort: some filesystems refuse it.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The first half of an atomic replace of `path`: `bytes` written to a temp file beside it and
/// fsynced. Returns the temp file's path, for [`commit_file`]. Staging several files before
/// committing any lets a caller replace them all or none.
pub fn stage_file(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(tmp)
}

/// The second half: the staged temp file renamed over `path`, and the folder fsynced so the
/// rename is durable (best effort: some filesystems refuse it).
pub fn commit_file(tmp: &Path, path: &Path) -> std::io::Result<()> {
    std::fs::rename(tmp, path)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")));
    Ok(())
}

/// Writes `value` as pretty JSON (known secrets redacted) to `path` so that readers see the old file or the new one, never
/// a mix: a temp file beside it, fsync, rename over `path`, fsync of the folder.
pub fn write_snapshot<T: Serialize>(path: &Path, value: &T) -> Result<(), LogError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let text = encode(path, value, serde_json::to_string_pretty)?;
    crate::create_own_dir(dir).map_err(io(dir))?;
    let tmp = stage_file(path, text.as_bytes()).map_err(io(path))?;
    commit_file(&tmp, path).map_err(io(path))
}

/// Now, in RFC 3339 UTC: the timestamp of every record baton keeps.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The snapshot at `path`, or `None` when there is none.
pub fn read_snapshot<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, LogError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path)(e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| LogError::Corrupt {
            path: path.to_path_buf(),
            line: 1,
            source,
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Ev {
        n: u32,
        text: String,
    }

    fn ev(n: u32) -> Ev {
        Ev {
            n,
            text: format!("é\n{n}"),
        }
    }

    #[test]
    fn append_all_writes_every_record_after_the_earlier_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.jsonl");
        let mut log = JsonlLog::<Ev>::create(&path, Durability::Fsync).unwrap();
        log.append(&ev(0)).unwrap();
        log.append_all(&[ev(1), ev(2)]).unwrap();
        log.append_all(&[]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert_eq!(
            JsonlLog::<Ev>::read(&path).unwrap(),
            vec![ev(0), ev(1), ev(2)]
        );
    }

    #[test]
    fn append_then_read_back_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("deep/er/x.events.jsonl");
        let mut log = JsonlLog::<Ev>::create(&path, Durability::Fsync).unwrap();
        for n in 0..3 {
            log.append(&ev(n)).unwrap();
        }
        assert_eq!(
            JsonlLog::<Ev>::read(&path).unwrap(),
            vec![ev(0), ev(1), ev(2)]
        );
        assert!(matches!(
            JsonlLog::<Ev>::create(&path, Durability::Fsync),
            Err(LogError::Exists { .. })
        ));
        assert!(matches!(
            JsonlLog::<Ev>::read(&tmp.path().join("none")),
            Err(LogError::NotFound { .. })
        ));
    }

    /// Logs and snapshots never hold a known secret. (The redactor is installed for the whole
    /// test process; the secret appears in no other test.)
    #[test]
    fn logs_and_snapshots_are_written_with_known_secrets_redacted() {
        let secret = "state-log-secret-0123";
        baton_text::redact::install(baton_text::redact::Redactor::new([secret]));
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.jsonl");
        let record = Ev {
            n: 1,
            text: format!("401: key {secret} rejected"),
        };
        JsonlLog::<Ev>::create(&path, Durability::Fsync)
            .unwrap()
            .append(&record)
            .unwrap();
        let snapshot = tmp.path().join("x.json");
        write_snapshot(&snapshot, &record).unwrap();
        let redacted = Ev {
            n: 1,
            text: "401: key [REDACTED] rejected".into(),
        };
        assert_eq!(JsonlLog::<Ev>::read(&path).unwrap(), vec![redacted.clone()]);
        assert_eq!(read_snapshot::<Ev>(&snapshot).unwrap(), Some(redacted));
    }

    #[test]
    fn a_torn_last_line_is_ignored_then_cut_before_the_next_append() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.jsonl");
        let mut log = JsonlLog::<Ev>::create(&path, Durability::Written).unwrap();
        log.append(&ev(1)).unwrap();
        drop(log);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"n\":2,\"te").unwrap();
        drop(f);
        assert_eq!(JsonlLog::<Ev>::read(&path).unwrap(), vec![ev(1)]);
        let (mut log, records) = JsonlLog::<Ev>::open(&path, Durability::Fsync).unwrap();
        assert_eq!(records, vec![ev(1)]);
        log.append(&ev(3)).unwrap();
        assert_eq!(JsonlLog::<Ev>::read(&path).unwrap(), vec![ev(1), ev(3)]);
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("}\n"));
    }

    /// `open_append` reads nothing of a log that ends with a whole line, and treats an
    /// unfinished last line as `open` does: a torn record is cut before the append, a tail of
    /// NUL bytes is damage and nothing is cut or written.
    #[test]
    fn open_append_cuts_a_torn_line_and_refuses_a_damaged_one_as_open_does() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("w.events.jsonl");
        let mut log = JsonlLog::<Ev>::create(&path, Durability::Written).unwrap();
        log.append(&ev(1)).unwrap();
        drop(log);
        JsonlLog::<Ev>::open_append(&path, Durability::Fsync)
            .unwrap()
            .append(&ev(2))
            .unwrap();
        assert_eq!(JsonlLog::<Ev>::read(&path).unwrap(), vec![ev(1), ev(2)]);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"n\":3,\"te").unwrap();
        drop(f);
        JsonlLog::<Ev>::open_append(&path, Durability::Fsync)
            .unwrap()
            .append(&ev(4))
            .unwrap();
        assert_eq!(
            JsonlLog::<Ev>::read(&path).unwrap(),
            vec![ev(1), ev(2), ev(4)]
        );
        let before = std::fs::read(&path).unwrap();
        let mut damaged = before.clone();
        damaged.extend_from_slice(b"\0\0\0");
        std::fs::write(&path, &damaged).unwrap();
        let Err(err) = JsonlLog::<Ev>::open_append(&path, Durability::Fsync) else {
            panic!("a NUL tail opened for appending");
        };
        assert!(err.damage().is_some(), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), damaged);
        let gone = tmp.path().join("none.jsonl");
        assert!(matches!(
            JsonlLog::<Ev>::open_append(&gone, Durability::Fsync),
            Err(LogError::NotFound { .. })
        ));
        // An empty log takes its first line.
        std::fs::write(&path, b"").unwrap();
        JsonlLog::<Ev>::open_append(&path, Durability::Fsync)
            .unwrap()
            .append(&ev(5))
            .unwrap();
        assert_eq!(JsonlLog::<Ev>::read(&path).unwrap(), vec![ev(5)]);
    }

    #[test]
    fn a_bad_complete_line_is_corrupt_and_names_its_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.jsonl");
        std::fs::write(&path, "{\"n\":1,\"text\":\"a\"}\n\nnot json\n").unwrap();
        let err = JsonlLog::<Ev>::read(&path).unwrap_err();
        let d = err.damage().expect("damage");
        assert_eq!((d.line, d.intact), (3, 1), "{err}");
        assert!(err.to_string().contains("line 3 cannot be read"), "{err}");
        assert!(err.to_string().contains("baton repair x"), "{err}");
        // Nothing was cut or changed by the failed open.
        assert!(JsonlLog::<Ev>::open(&path, Durability::Fsync).is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"n\":1,\"text\":\"a\"}\n\nnot json\n"
        );
    }

    /// Zeros where lines should be (blocks that never reached the disk) are damage wherever
    /// they are, also as the last line without a newline: nothing is dropped or cut.
    #[test]
    fn nul_bytes_are_damage_even_in_the_last_line_and_nothing_is_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s1.journal");
        let one = "{\"n\":1,\"text\":\"a\"}\n";
        for (content, line, intact) in [
            (format!("{one}\0\0\0\0"), 2, 1),
            ("\0".repeat(40), 1, 0),
            (format!("{one}\0\0\n{one}"), 2, 1),
            (format!("{one}{{\"n\":2,\x01}}\n"), 2, 1),
        ] {
            std::fs::write(&path, &content).unwrap();
            let err = JsonlLog::<Ev>::read(&path).unwrap_err();
            let d = err.damage().unwrap_or_else(|| panic!("{err}"));
            assert_eq!((d.line, d.intact), (line, intact), "{err}");
            assert_eq!(d.intact_len, if intact == 1 { one.len() as u64 } else { 0 });
            let text = err.to_string();
            assert!(text.contains("s1.journal: line"), "{text}");
            assert!(text.contains("baton repair s1"), "{text}");
            assert!(JsonlLog::<Ev>::open(&path, Durability::Fsync).is_err());
            assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
        }
    }

    #[test]
    fn sequence_numbers_must_count_up_from_one() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f.events.jsonl");
        let line = |n: u32| format!("{{\"n\":{n},\"text\":\"x\"}}\n");
        std::fs::write(&path, format!("{}{}{}", line(1), line(2), line(3))).unwrap();
        assert_eq!(
            JsonlLog::<Ev>::read_sequenced(&path, |e| e.n.into())
                .unwrap()
                .len(),
            3
        );
        std::fs::write(&path, format!("{}{}{}", line(1), line(4), line(5))).unwrap();
        let err = JsonlLog::<Ev>::read_sequenced(&path, |e| e.n.into()).unwrap_err();
        assert!(
            err.to_string()
                .contains("line 2 is event 4 where event 2 should be: events 2–3 are missing"),
            "{err}"
        );
        assert!(err.to_string().contains("lines 2–3"), "{err}");
    }

    #[test]
    fn keep_intact_sets_the_damaged_file_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.jsonl");
        std::fs::write(&path, "{\"n\":1,\"text\":\"a\"}\nbad\n").unwrap();
        let d = JsonlLog::<Ev>::read(&path).unwrap_err();
        let keep = d.damage().unwrap().intact_len;
        let aside = crate::damage::keep_intact(&path, keep).unwrap();
        assert_eq!(aside, tmp.path().join("x.jsonl.damaged"));
        assert_eq!(JsonlLog::<Ev>::read(&path).unwrap().len(), 1);
        assert!(std::fs::read_to_string(&aside).unwrap().ends_with("bad\n"));
        std::fs::write(&path, "again").unwrap();
        let second = crate::damage::keep_intact(&path, 0).unwrap();
        assert_eq!(second, tmp.path().join("x.jsonl.damaged.2"));
    }

    #[test]
    fn snapshot_replaces_whole_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.json");
        assert_eq!(read_snapshot::<Ev>(&path).unwrap(), None);
        write_snapshot(&path, &ev(1)).unwrap();
        write_snapshot(&path, &ev(2)).unwrap();
        assert_eq!(read_snapshot::<Ev>(&path).unwrap(), Some(ev(2)));
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("s.json")]);
    }
}
