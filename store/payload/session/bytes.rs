//! The Log's events decoded straight from their bytes: the hot read of a replay.
//!
//! serde's derive decodes a tagged event with flattened unknown fields by buffering the whole map,
//! then buffering it again for the flattened part, then trying the `Other` fallback from the
//! buffer: about a microsecond per event, most of a replay's time. This decoder walks the bytes
//! once, straight into the typed event.
//!
//! Invariant: it answers only where the serde decoder would give the same value, and gives up
//! (`None`) everywhere else, leaving the answer (and any error) to the serde decoder, which
//! defines the meaning. It gives up on anything not in canonical DAG-CBOR form (a longer head than
//! needed, keys out of order or repeated, trailing bytes), on values serde's buffering treats
//! specially (floats, tags such as links, integers below `i64::MIN`), on an unknown or missing
//! `type`, and on a known event whose fields do not fit (which serde reads as `Other`).

use super::{
    ErrorEvent, MessageEvent, MessageRole, SessionActor, SessionEventMeta, SessionEventPayload,
    ToolCallEvent, ToolResultEvent, ToolSpawnEvent,
};
use crate::payload::{Ipld, OpenMap, RunUsage};

/// How deep values may nest before the decoder leaves them to serde.
const DEPTH: usize = 64;

/// Decodes `bytes` as an event, or `None` where the serde decoder is to decide.
pub(crate) fn decode(bytes: &[u8]) -> Option<SessionEventPayload> {
    let mut reader = Reader { bytes, at: 0 };
    let entries = reader.map_entries(0)?;
    if reader.at != bytes.len() {
        return None;
    }
    let kind = entries
        .iter()
        .find(|(key, _)| *key == "type")
        .map(|(_, value)| value.text())??;
    let fields = entries.into_iter().filter(|(key, _)| *key != "type");
    Some(match kind.as_str() {
        "message" => SessionEventPayload::Message(message(fields)?),
        "tool_call" => SessionEventPayload::ToolCall(tool_call(fields)?),
        "tool_spawn" => SessionEventPayload::ToolSpawn(tool_spawn(fields)?),
        "tool_result" => SessionEventPayload::ToolResult(tool_result(fields)?),
        "error" => SessionEventPayload::Error(error(fields)?),
        _ => return None,
    })
}

/// One value of a map, not yet decoded: its bytes, already checked to be one canonical item.
#[derive(Clone, Copy)]
struct Value<'a>(&'a [u8]);

impl<'a> Value<'a> {
    fn reader(self) -> Reader<'a> {
        Reader {
            bytes: self.0,
            at: 0,
        }
    }

    /// A text string (a required `String`, or a string enum).
    fn text(self) -> Option<String> {
        let mut reader = self.reader();
        match reader.head()? {
            (3, len) => reader.text_after_head(len),
            _ => None,
        }
    }

    /// An optional `String`: `null` reads as absent, as serde's `Option` does.
    fn opt_text(self) -> Option<Option<String>> {
        if self.is_null() {
            return Some(None);
        }
        self.text().map(Some)
    }

    fn is_null(self) -> bool {
        self.0 == [0xf6]
    }

    /// Any value.
    fn ipld(self) -> Option<Ipld> {
        self.reader().ipld(0)
    }

    /// An optional list of any values.
    fn opt_list(self) -> Option<Option<Vec<Ipld>>> {
        if self.is_null() {
            return Some(None);
        }
        match self.ipld()? {
            Ipld::List(items) => Some(Some(items)),
            _ => None,
        }
    }

    /// An optional list of strings.
    fn opt_texts(self) -> Option<Option<Vec<String>>> {
        let Some(items) = self.opt_list()? else {
            return Some(None);
        };
        let texts = items.into_iter().map(|item| match item {
            Ipld::String(text) => Some(text),
            _ => None,
        });
        texts.collect::<Option<Vec<_>>>().map(Some)
    }

    /// An optional open map.
    fn opt_map(self) -> Option<Option<OpenMap>> {
        if self.is_null() {
            return Some(None);
        }
        match self.ipld()? {
            Ipld::Map(map) => Some(Some(map)),
            _ => None,
        }
    }

    /// An optional `u64`.
    fn opt_u64(self) -> Option<Option<u64>> {
        if self.is_null() {
            return Some(None);
        }
        match self.reader().head()? {
            (0, n) => Some(Some(n)),
            _ => None,
        }
    }

    /// An optional [`SessionEventMeta`].
    fn opt_meta(self) -> Option<Option<SessionEventMeta>> {
        if self.is_null() {
            return Some(None);
        }
        let mut meta = SessionEventMeta::default();
        for (key, value) in self.reader().map_entries(0)? {
            match key {
                "accountId" => meta.account_id = value.opt_text()?,
                "signerId" => meta.signer_id = value.opt_text()?,
                "model" => meta.model = value.opt_text()?,
                "provider" => meta.provider = value.opt_text()?,
                "usage" => meta.usage = value.opt_map()?.map(RunUsage),
                "durationMs" => meta.duration_ms = value.opt_u64()?,
                "reasoningLevel" => meta.reasoning_level = value.opt_text()?,
                _ => {
                    meta.extra.insert(key.to_owned(), value.ipld()?);
                }
            }
        }
        Some(Some(meta))
    }
}

/// Unknown fields go to `extra`, as serde's `flatten` puts them.
fn keep(extra: &mut OpenMap, key: &str, value: Value) -> Option<()> {
    extra.insert(key.to_owned(), value.ipld()?);
    Some(())
}

fn message<'a>(fields: impl Iterator<Item = (&'a str, Value<'a>)>) -> Option<MessageEvent> {
    let (mut role, mut content) = (None, None);
    let mut event = MessageEvent::new(MessageRole::User, String::new());
    for (key, value) in fields {
        match key {
            "role" => role = Some(MessageRole::from(value.text()?)),
            "content" => content = Some(value.text()?),
            "toolCallId" => event.tool_call_id = value.opt_text()?,
            "rawMarkdown" => event.raw_markdown = value.opt_text()?,
            "blocks" => event.blocks = value.opt_list()?,
            "contextLines" => event.context_lines = value.opt_texts()?,
            "attachments" => event.attachments = value.opt_list()?,
            "actor" => event.actor = value.opt_text()?.map(SessionActor::from),
            "meta" => event.meta = value.opt_meta()?,
            _ => keep(&mut event.extra, key, value)?,
        }
    }
    event.role = role?;
    event.content = content?;
    Some(event)
}

fn tool_call<'a>(fields: impl Iterator<Item = (&'a str, Value<'a>)>) -> Option<ToolCallEvent> {
    let (mut id, mut name, mut input, mut actor) = (None, None, None, None);
    let mut extra = OpenMap::new();
    for (key, value) in fields {
        match key {
            "id" => id = Some(value.text()?),
            "name" => name = Some(value.text()?),
            "input" => input = Some(value.ipld()?),
            "actor" => actor = value.opt_text()?.map(SessionActor::from),
            _ => keep(&mut extra, key, value)?,
        }
    }
    Some(ToolCallEvent {
        id: id?,
        name: name?,
        input: input?,
        actor,
        extra,
    })
}

fn tool_spawn<'a>(fields: impl Iterator<Item = (&'a str, Value<'a>)>) -> Option<ToolSpawnEvent> {
    let (mut tool_call_id, mut name, mut run_id, mut title) = (None, None, None, None);
    let (mut session_id, mut actor) = (None, None);
    let mut extra = OpenMap::new();
    for (key, value) in fields {
        match key {
            "toolCallId" => tool_call_id = Some(value.text()?),
            "name" => name = Some(value.text()?),
            "runId" => run_id = Some(value.text()?),
            "sessionId" => session_id = value.opt_text()?,
            "title" => title = Some(value.text()?),
            "actor" => actor = value.opt_text()?.map(SessionActor::from),
            _ => keep(&mut extra, key, value)?,
        }
    }
    Some(ToolSpawnEvent {
        tool_call_id: tool_call_id?,
        name: name?,
        run_id: run_id?,
        session_id,
        title: title?,
        actor,
        extra,
    })
}

fn tool_result<'a>(fields: impl Iterator<Item = (&'a str, Value<'a>)>) -> Option<ToolResultEvent> {
    let (mut tool_call_id, mut name) = (None, None);
    let mut event = ToolResultEvent::output(String::new(), String::new(), Ipld::Null);
    event.output = None;
    for (key, value) in fields {
        match key {
            "toolCallId" => tool_call_id = Some(value.text()?),
            "name" => name = Some(value.text()?),
            // A present `null` is kept (`keep_null`): only an absent key is `None`.
            "output" => event.output = Some(value.ipld()?),
            "error" => event.error = value.opt_text()?,
            "actor" => event.actor = value.opt_text()?.map(SessionActor::from),
            "meta" => event.meta = value.opt_meta()?,
            _ => keep(&mut event.extra, key, value)?,
        }
    }
    event.tool_call_id = tool_call_id?;
    event.name = name?;
    Some(event)
}

fn error<'a>(fields: impl Iterator<Item = (&'a str, Value<'a>)>) -> Option<ErrorEvent> {
    let (mut message, mut actor) = (None, None);
    let mut extra = OpenMap::new();
    for (key, value) in fields {
        match key {
            "message" => message = Some(value.text()?),
            "actor" => actor = value.opt_text()?.map(SessionActor::from),
            _ => keep(&mut extra, key, value)?,
        }
    }
    Some(ErrorEvent {
        message: message?,
        actor,
        extra,
    })
}

/// A cursor over canonical DAG-CBOR; every method gives up (`None`) on anything else.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    /// The next item's major type and argument, the argument in its shortest form; floats and
    /// simple values other than `false`, `true` and `null` give up (major 7 comes back with the
    /// simple value).
    fn head(&mut self) -> Option<(u8, u64)> {
        let first = *self.take(1)?.first()?;
        let (major, info) = (first >> 5, first & 0x1f);
        let arg = match info {
            0..=23 => u64::from(info),
            24 => u64::from(self.take(1)?[0]).filter_min(24)?,
            25 => u64::from(u16::from_be_bytes(self.take(2)?.try_into().ok()?)).filter_min(256)?,
            26 => {
                u64::from(u32::from_be_bytes(self.take(4)?.try_into().ok()?)).filter_min(65_536)?
            }
            27 => u64::from_be_bytes(self.take(8)?.try_into().ok()?).filter_min(1 << 32)?,
            _ => return None,
        };
        if major == 7 && !(info < 24 && (20..=22).contains(&arg)) {
            return None;
        }
        Some((major, arg))
    }

    fn text_after_head(&mut self, len: u64) -> Option<String> {
        let bytes = self.take(usize::try_from(len).ok()?)?;
        std::str::from_utf8(bytes).ok().map(str::to_owned)
    }

    /// A map's entries, its keys text in canonical order (shorter first, then bytewise) and
    /// unique, each value checked and kept as bytes.
    fn map_entries(&mut self, depth: usize) -> Option<Vec<(&'a str, Value<'a>)>> {
        let (5, len) = self.head()? else {
            return None;
        };
        let len = usize::try_from(len).ok()?;
        let mut entries: Vec<(&'a str, Value<'a>)> = Vec::with_capacity(len.min(64));
        for _ in 0..len {
            let (3, key_len) = self.head()? else {
                return None;
            };
            let key = std::str::from_utf8(self.take(usize::try_from(key_len).ok()?)?).ok()?;
            if let Some((last, _)) = entries.last() {
                if (last.len(), last.as_bytes()) >= (key.len(), key.as_bytes()) {
                    return None;
                }
            }
            let start = self.at;
            self.skip(depth + 1)?;
            entries.push((key, Value(&self.bytes[start..self.at])));
        }
        Some(entries)
    }

    /// Steps over one item, checking it as [`Reader::ipld`] would decode it.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        let start = self.at;
        match self.head()? {
            (0, _) | (7, _) => {}
            (1, n) => {
                i64::try_from(n).ok()?;
            }
            (2, len) => {
                self.take(usize::try_from(len).ok()?)?;
            }
            (3, len) => {
                std::str::from_utf8(self.take(usize::try_from(len).ok()?)?).ok()?;
            }
            (4, len) => {
                for _ in 0..len {
                    self.skip(depth + 1)?;
                }
            }
            (5, _) => {
                self.at = start;
                self.map_entries(depth)?;
            }
            _ => return None,
        }
        Some(())
    }

    /// One item as [`Ipld`].
    fn ipld(&mut self, depth: usize) -> Option<Ipld> {
        if depth > DEPTH {
            return None;
        }
        let start = self.at;
        Some(match self.head()? {
            (0, n) => Ipld::Integer(i128::from(n)),
            (1, n) => Ipld::Integer(-1 - i128::from(i64::try_from(n).ok()?)),
            (2, len) => Ipld::Bytes(self.take(usize::try_from(len).ok()?)?.to_vec()),
            (3, len) => Ipld::String(self.text_after_head(len)?),
            (4, len) => {
                let len = usize::try_from(len).ok()?;
                let mut items = Vec::with_capacity(len.min(64));
                for _ in 0..len {
                    items.push(self.ipld(depth + 1)?);
                }
                Ipld::List(items)
            }
            (5, _) => {
                self.at = start;
                let entries = self.map_entries(depth)?;
                let mut map = OpenMap::new();
                for (key, value) in entries {
                    map.insert(key.to_owned(), value.reader().ipld(depth + 1)?);
                }
                Ipld::Map(map)
            }
            (7, 20) => Ipld::Bool(false),
            (7, 21) => Ipld::Bool(true),
            (7, 22) => Ipld::Null,
            _ => return None,
        })
    }
}

/// A head's argument, refused when a shorter head could have held it (not canonical).
trait FilterMin: Sized {
    fn filter_min(self, min: u64) -> Option<Self>;
}

impl FilterMin for u64 {
    fn filter_min(self, min: u64) -> Option<u64> {
        (self >= min).then_some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{SessionActor, SessionEventMeta};

    fn bytes(event: &SessionEventPayload) -> Vec<u8> {
        crate::values::cbor::to_vec(event).unwrap()
    }

    #[test]
    fn every_kind_of_event_the_store_writes_is_decoded_here() {
        let mut message = MessageEvent::user("hello");
        message.actor = Some(SessionActor::User);
        message.context_lines = Some(vec!["ctx".into()]);
        message.meta = Some(SessionEventMeta {
            account_id: Some("acct".into()),
            duration_ms: Some(12),
            usage: Some(RunUsage(OpenMap::from([(
                "input".into(),
                Ipld::Integer(7),
            )]))),
            extra: OpenMap::from([("later".into(), Ipld::List(vec![Ipld::Bool(true)]))]),
            ..SessionEventMeta::default()
        });
        message
            .extra
            .insert("unknown".into(), Ipld::Bytes(vec![1, 2]));
        let input = Ipld::Map(OpenMap::from([(
            "path".into(),
            Ipld::String("notes.md".into()),
        )]));
        let events: Vec<SessionEventPayload> = vec![
            message.into(),
            ToolCallEvent::new("call-1", "read", input).into(),
            ToolResultEvent::output("call-1", "read", Ipld::Null).into(),
            ToolResultEvent::error("call-1", "read", "no such file").into(),
            ErrorEvent::new("boom").into(),
            SessionEventPayload::ToolSpawn(ToolSpawnEvent {
                tool_call_id: "call-2".into(),
                name: "delegate".into(),
                run_id: "run-1".into(),
                session_id: None,
                title: "child".into(),
                actor: None,
                extra: OpenMap::new(),
            }),
        ];
        for event in events {
            assert_eq!(decode(&bytes(&event)), Some(event));
        }
    }

    #[test]
    fn what_serde_reads_specially_is_left_to_serde() {
        let float = {
            let mut m = MessageEvent::user("x");
            m.extra.insert("f".into(), Ipld::Float(1.5));
            SessionEventPayload::Message(m)
        };
        let unknown_type = SessionEventPayload::Other(OpenMap::from([(
            "type".into(),
            Ipld::String("compaction".into()),
        )]));
        let wrong_shape = SessionEventPayload::Other(OpenMap::from([
            ("type".into(), Ipld::String("message".into())),
            ("role".into(), Ipld::String("user".into())),
            ("content".into(), Ipld::Integer(3)),
        ]));
        for event in [float, unknown_type, wrong_shape] {
            assert_eq!(decode(&bytes(&event)), None, "{event:?}");
        }
        let mut long = bytes(&ErrorEvent::new("boom").into());
        long.extend([0x18]);
        assert_eq!(decode(&long), None, "trailing bytes");
        let error = [
            0xa2, 0x64, b't', b'y', b'p', b'e', 0x65, b'e', b'r', b'r', b'o', b'r', 0x67, b'm',
            b'e', b's', b's', b'a', b'g', b'e', 0x78, 0x01, b'x',
        ];
        assert_eq!(decode(&error), None, "a one-byte length in a longer head");
    }
}
