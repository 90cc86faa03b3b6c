//! Server-sent events, from raw body bytes to [`StreamEvent`]s.
//!
//! Two layers:
//!
//! - [`SseDecoder`] turns bytes into [`SseEvent`]s following the WHATWG event-stream rules. It keeps
//!   bytes until a line is complete, so chunk boundaries may fall anywhere: inside a multi-byte
//!   UTF-8 character (a line break byte never occurs inside one), between the `\r` and `\n` of a
//!   line ending, or between the `data:` lines of one event. Lines may end in `\n`, `\r\n` or `\r`;
//!   comment lines (`: ping`) are skipped; several `data:` lines join with `\n`.
//! - [`pump`] drives a body stream through the decoder and a per-format [`EventParser`], enforcing
//!   the idle timeout and turning a stream that ends before its terminal event into
//!   [`ModelError::StreamCut`]. The HTTP providers and the unit tests use the same path.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};

use crate::error::ModelError;
use crate::http::{error_chain, with_timeout, Ctx};
use crate::provider::EventStream;
use crate::types::StreamEvent;

/// One dispatched server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when the server sent none (the spec's default type "message").
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last `id:` seen, if any.
    pub id: Option<String>,
}

/// Incremental event-stream decoder. Feed it chunks, collect events.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the line being read.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` opening the next chunk ends no new line.
    after_cr: bool,
    /// At least one line was read (the byte-order mark is only stripped from the first).
    seen_line: bool,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Consumes one chunk, appending every event it completes to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) {
        while let Some((&first, rest)) = chunk.split_first() {
            if self.after_cr {
                self.after_cr = false;
                if first == b'\n' {
                    chunk = rest;
                    continue;
                }
            }
            match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.line.extend_from_slice(&chunk[..end]);
                    self.after_cr = chunk[end] == b'\r';
                    chunk = &chunk[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, out);
                    // Reuse the allocation.
                    self.line = line;
                    self.line.clear();
                }
                None => {
                    self.line.extend_from_slice(chunk);
                    chunk = &[];
                }
            }
        }
    }

    /// The body ended. A final event whose lines were complete but that lacked the closing blank
    /// line is still dispatched (lenient; some servers close right after the last `data:` line).
    /// An unterminated last line is dropped: the connection was cut inside it.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        self.line.clear();
        self.dispatch(out);
    }

    fn line_done(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) {
        let mut raw = raw;
        if !self.seen_line {
            self.seen_line = true;
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.is_empty() {
            self.dispatch(out);
            return;
        }
        if raw.first() == Some(&b':') {
            return;
        }
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            // `retry` only matters to browsers reconnecting; other fields are ignored by the spec.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if self.has_data {
            self.has_data = false;
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
                id: self.id.clone(),
            });
        }
    }
}

/// Turns the server-sent events of one wire format into [`StreamEvent`]s.
pub(crate) trait EventParser: Send + 'static {
    /// Handles one event, appending what it produced. Emitting `Stop` ends the stream.
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ModelError>;

    /// The body ended before `Stop`: either finish leniently (append `Stop`) or return the error
    /// explaining the cut.
    fn on_eof(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError>;
}

type Body = Pin<Box<dyn Stream<Item = Result<Vec<u8>, String>> + Send>>;

struct Pump<P> {
    body: Body,
    decoder: SseDecoder,
    parser: P,
    ready: VecDeque<Result<StreamEvent, ModelError>>,
    ended: bool,
    ctx: Ctx,
    idle: Duration,
}

/// Drives `body` (the raw bytes of a response) through the SSE decoder and `parser`.
///
/// - A gap longer than `idle` between two chunks (zero disables the check) → `StreamCut`.
/// - A body read error → `StreamCut`.
/// - End of body before `Stop` → whatever [`EventParser::on_eof`] decides, `StreamCut` by default.
/// - Anything after `Stop` is not read.
pub(crate) fn pump<S, B, E, P>(body: S, parser: P, ctx: Ctx, idle: Duration) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]>,
    E: std::error::Error + 'static,
    P: EventParser,
{
    let body: Body = Box::pin(body.map(|r| match r {
        Ok(b) => Ok(b.as_ref().to_vec()),
        Err(e) => Err(error_chain(&e)),
    }));
    let state = Pump {
        body,
        decoder: SseDecoder::new(),
        parser,
        ready: VecDeque::new(),
        ended: false,
        ctx,
        idle,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.ready.pop_front() {
                return Some((item, st));
            }
            if st.ended {
                return None;
            }
            st.step().await;
        }
    }))
}

impl<P: EventParser> Pump<P> {
    /// Reads one chunk (or the end) and queues what it yields.
    async fn step(&mut self) {
        let mut sse = Vec::new();
        match with_timeout(self.idle, self.body.next()).await {
            Some(Some(Ok(chunk))) => {
                self.decoder.feed(&chunk, &mut sse);
                self.parse(sse);
            }
            Some(Some(Err(e))) => self.fail(
                self.ctx
                    .cut(format!("reading the response body failed: {e}")),
            ),
            Some(None) => {
                self.decoder.finish(&mut sse);
                self.parse(sse);
                if self.ended {
                    return;
                }
                let mut out = Vec::new();
                let result = self.parser.on_eof(&mut out);
                let stopped = out.iter().any(|e| matches!(e, StreamEvent::Stop { .. }));
                self.ready.extend(out.into_iter().map(Ok));
                match result {
                    Ok(()) if stopped => self.ended = true,
                    Ok(()) => self.fail(
                        self.ctx
                            .cut("the connection closed before the turn was complete"),
                    ),
                    Err(e) => self.fail(e),
                }
            }
            None => self.fail(
                self.ctx
                    .cut(format!("no data for {:?} (stream_idle_timeout)", self.idle)),
            ),
        }
    }

    fn parse(&mut self, events: Vec<SseEvent>) {
        let mut out = Vec::new();
        for ev in events {
            if self.ended {
                return;
            }
            let result = self.parser.on_event(ev, &mut out);
            for e in out.drain(..) {
                let stop = matches!(e, StreamEvent::Stop { .. });
                self.ready.push_back(Ok(e));
                if stop {
                    self.ended = true;
                    return;
                }
            }
            if let Err(e) = result {
                self.fail(e);
            }
        }
    }

    fn fail(&mut self, error: ModelError) {
        self.ready.push_back(Err(error));
        self.ended = true;
    }
}

impl crate::http::Endpoint {
    /// Posts one streaming request and decodes its event stream with the parser `parser` makes.
    pub(crate) async fn stream<P: EventParser>(
        &self,
        model: &str,
        default_headers: &[(&str, String)],
        body: &serde_json::Value,
        parser: fn(Ctx) -> P,
    ) -> Result<crate::provider::EventStream, ModelError> {
        let (ctx, response) = self.post(model, default_headers, body).await?;
        Ok(pump(
            response.bytes_stream(),
            parser(ctx.clone()),
            ctx,
            self.idle_timeout,
        ))
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Replays a recorded body through [`pump`] under many chunkings.

    use pretty_assertions::assert_eq;

    use super::*;
    use crate::types::{AssistantTurn, TurnAccumulator};

    /// Every event of a stream, then the assembled turn (or the error that ended it).
    pub type Outcome = (Vec<StreamEvent>, Result<AssistantTurn, ModelError>);

    pub fn run(
        rt: &tokio::runtime::Runtime,
        chunks: Vec<Vec<u8>>,
        make: &dyn Fn(EventStreamBody) -> EventStream,
    ) -> Outcome {
        rt.block_on(async {
            let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
            let mut stream = make(Box::pin(body));
            let mut events = Vec::new();
            let mut acc = TurnAccumulator::new();
            while let Some(item) = stream.next().await {
                match item {
                    Ok(ev) => {
                        acc.push(&ev);
                        events.push(ev);
                    }
                    Err(e) => return (events, Err(e)),
                }
            }
            (events, Ok(acc.finish()))
        })
    }

    pub type EventStreamBody = Pin<Box<dyn Stream<Item = Result<Vec<u8>, std::io::Error>> + Send>>;

    /// Decodes a recorded body with the parser a provider's `new` makes for `ctx`, as the
    /// provider's stream would (five seconds of silence end it).
    pub fn decode<P: EventParser>(
        parser: fn(Ctx) -> P,
        ctx: Ctx,
        body: EventStreamBody,
    ) -> EventStream {
        pump(body, parser(ctx.clone()), ctx, Duration::from_secs(5))
    }

    /// Asserts that `body` decodes to `want`, the same under every chunking.
    pub fn assert_decodes(
        body: &str,
        make: &dyn Fn(EventStreamBody) -> EventStream,
        want: AssistantTurn,
    ) {
        let (_, turn) = same_for_every_split(body.as_bytes(), make);
        assert_eq!(turn, Ok(want));
    }

    /// Asserts that every split of `bytes` into two chunks, and fixed chunkings of 1, 2, 3 and 7
    /// bytes, yield exactly the outcome of the whole body in one chunk. Returns that outcome.
    pub fn same_for_every_split(
        bytes: &[u8],
        make: &dyn Fn(EventStreamBody) -> EventStream,
    ) -> Outcome {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let whole = run(&rt, vec![bytes.to_vec()], make);
        for k in 1..bytes.len() {
            let got = run(&rt, vec![bytes[..k].to_vec(), bytes[k..].to_vec()], make);
            assert_eq!(got, whole, "split at byte {k}");
        }
        for size in [1, 2, 3, 7] {
            let chunks = bytes.chunks(size).map(<[u8]>::to_vec).collect();
            let got = run(&rt, chunks, make);
            assert_eq!(got, whole, "chunks of {size} bytes");
        }
        whole
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out);
        }
        d.finish(&mut out);
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.to_string(),
            data: data.to_string(),
            id: None,
        }
    }

    #[test]
    fn decodes_fields_comments_and_line_endings() {
        let text = "\u{feff}: ping\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\n\
                    data: é🦀\n\n: keepalive\n\nevent: empty\n\nid: 7\rdata\r\rdata: last\n";
        let whole = decode_chunks(&[text.as_bytes()]);
        assert_eq!(
            whole,
            vec![
                ev("a", "one\ntwo"),
                ev("", "é🦀"),
                SseEvent {
                    event: String::new(),
                    data: String::new(),
                    id: Some("7".into())
                },
                SseEvent {
                    event: String::new(),
                    data: "last".into(),
                    id: Some("7".into())
                },
            ]
        );
        let bytes = text.as_bytes();
        for k in 0..=bytes.len() {
            assert_eq!(
                decode_chunks(&[&bytes[..k], &bytes[k..]]),
                whole,
                "split {k}"
            );
            for j in k..=bytes.len() {
                assert_eq!(
                    decode_chunks(&[&bytes[..k], &bytes[k..j], &bytes[j..]]),
                    whole,
                    "split {k},{j}"
                );
            }
        }
    }

    #[test]
    fn unterminated_last_line_is_dropped() {
        assert_eq!(
            decode_chunks(&[b"data: {\"a\":1}\n\ndata: {\"trunc"]),
            vec![ev("", "{\"a\":1}")]
        );
    }

    struct Echo;
    impl EventParser for Echo {
        fn on_event(&mut self, e: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
            out.push(StreamEvent::TextDelta { text: e.data });
            Ok(())
        }
        fn on_eof(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn an_idle_gap_cuts_the_stream() {
        let first = futures::stream::iter([Ok::<_, std::io::Error>(b"data: hi\n\n".to_vec())]);
        let body = first.chain(futures::stream::pending());
        let ctx = Ctx::new("p", "m");
        let got: Vec<_> = pump(body, Echo, ctx, Duration::from_millis(20))
            .collect()
            .await;
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], Ok(StreamEvent::TextDelta { text: "hi".into() }));
        assert!(
            matches!(&got[1], Err(ModelError::StreamCut { message, .. }) if message.contains("stream_idle_timeout")),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn eof_without_stop_and_body_errors_are_cuts() {
        let body = futures::stream::iter([Ok::<_, std::io::Error>(b"data: x\n\n".to_vec())]);
        let got: Vec<_> = pump(body, Echo, Ctx::new("p", "m"), Duration::ZERO)
            .collect()
            .await;
        assert!(matches!(
            got.last(),
            Some(Err(ModelError::StreamCut { .. }))
        ));

        let body = futures::stream::iter([
            Ok(b"data: x\n\n".to_vec()),
            Err(std::io::Error::other("connection reset")),
        ]);
        let got: Vec<_> = pump(body, Echo, Ctx::new("p", "m"), Duration::ZERO)
            .collect()
            .await;
        assert!(
            matches!(got.last(), Some(Err(ModelError::StreamCut { message, .. })) if message.contains("connection reset")),
            "{got:?}"
        );
    }
}
