//! A workflow history as Temporal's own tools write it: the proto JSON of
//! `temporal workflow show --output json` and of the web UI's download (camelCase field names,
//! enum values by name, 64-bit integers as strings, bytes in base64, an event's attributes under
//! a key of their own). The SDK's replayer reads only its own serde form of the same messages;
//! this reads the proto JSON into those messages, guided by what each one asks for while it is
//! decoded: a struct's field names, a number, a map (whose keys are data and stay as written).

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde_json::{Map, Value};
use temporalio_common::protos::temporal::api::enums::v1 as enums;
use temporalio_common::protos::temporal::api::history::v1::History;

type Error = serde_json::Error;

/// The history in `bytes`, written as proto JSON.
pub fn history(bytes: &[u8]) -> Result<History, Error> {
    let value: Value = serde_json::from_slice(bytes)?;
    serde::Deserialize::deserialize(given(value))
}

/// Whether `bytes` look like proto JSON rather than the SDK's own form: the first event names its
/// type in camelCase.
pub fn looks_like(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).contains("\"eventType\"")
}

/// The number of the enum value named `name` (`EVENT_TYPE_WORKFLOW_EXECUTION_STARTED`), in the
/// enums a history's messages use. Value names are unique within a protobuf package, so the
/// first enum that knows the name is the one.
fn enum_number(name: &str) -> Option<i32> {
    macro_rules! first_of {
        ($($t:ident),* $(,)?) => {
            None$(.or_else(|| enums::$t::from_str_name(name).map(|v| v as i32)))*
        };
    }
    first_of!(
        EventType,
        TaskQueueKind,
        TaskQueueType,
        ContinueAsNewInitiator,
        ContinueAsNewVersioningBehavior,
        RetryState,
        TimeoutType,
        ParentClosePolicy,
        WorkflowIdReusePolicy,
        WorkflowIdConflictPolicy,
        WorkflowTaskFailedCause,
        ActivityTaskFailedCause,
        StartChildWorkflowExecutionFailedCause,
        CancelExternalWorkflowExecutionFailedCause,
        SignalExternalWorkflowExecutionFailedCause,
        SuggestContinueAsNewReason,
        UpdateAdmittedEventOrigin,
        VersioningBehavior,
        WorkerVersioningMode,
        WorkflowExecutionStatus,
        PendingActivityState,
        PendingWorkflowTaskState,
        PendingNexusOperationState,
        NexusOperationCancellationState,
        CallbackState,
        TaskReachability,
        BuildIdTaskReachability,
        VersionDrainageStatus,
        WorkerDeploymentVersionStatus,
        RoutingConfigUpdateState,
        IndexedValueType,
    )
    .or_else(|| {
        temporalio_common::protos::temporal::api::workflow::v1::versioning_override::PinnedOverrideBehavior::from_str_name(name)
            .map(|v| v as i32)
    })
}

/// The one-ofs of the messages the SDK decodes with serde's derive, by message: the field that
/// holds the one-of. Proto JSON writes a one-of's member as a field of the message itself.
const ONE_OFS: &[(&str, &str)] = &[
    ("HistoryEvent", "attributes"),
    ("Command", "attributes"),
    ("Outcome", "value"),
    ("ActivityExecutionOutcome", "value"),
    ("VersioningOverride", "override"),
    ("PostResetOperation", "variant"),
    ("EventGroupMarker", "variant"),
    ("Trigger", "variant"),
    ("Request", "variant"),
    ("Response", "variant"),
    ("StartOperationResponse", "variant"),
    ("EndpointTarget", "variant"),
    ("Platform", "variant"),
    ("WorkflowRuleAction", "variant"),
    ("WorkflowRuleSpec", "trigger"),
    ("ScheduleAction", "action"),
    ("Message", "sequencing_id"),
    ("WorkerConfig", "poller_behavior"),
    ("BuildIdAssignmentRule", "ramp"),
    ("PendingActivityInfo", "assigned_build_id"),
    ("PauseInfo", "paused_by"),
    ("WorkerCommand", "type"),
    ("WorkerCommandResult", "type"),
];

/// `workflowTaskTimeout` as `workflow_task_timeout`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `workflowExecutionStartedEventAttributes` as `WorkflowExecutionStartedEventAttributes`: the
/// variant of the event's `attributes` one-of that key holds.
fn variant(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// Standard base64 (with or without padding, or the URL-safe alphabet) as bytes.
fn base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// One proto JSON value, decoded as the message type asking for it expects; `None` is a field
/// proto JSON leaves out because it holds its default (zero, empty, unset), which the SDK's
/// derived decoding wants written.
struct ProtoJson(Option<Value>);

fn given(value: Value) -> ProtoJson {
    ProtoJson(Some(value))
}

impl ProtoJson {
    /// A 64-bit integer written as a string, or an enum value written by name.
    fn integer<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Some(value) = self.0 else {
            return visitor.visit_i32(0);
        };
        match value {
            Value::String(s) => {
                if let Ok(n) = s.parse::<i64>() {
                    visitor.visit_i64(n)
                } else if let Ok(n) = s.parse::<u64>() {
                    visitor.visit_u64(n)
                } else if let Some(n) = enum_number(&s) {
                    visitor.visit_i32(n)
                } else {
                    Err(de::Error::custom(format!(
                        "`{s}` is neither a number nor an enum value a history uses"
                    )))
                }
            }
            other => other.deserialize_any(visitor).map_err(de::Error::custom),
        }
    }

    /// A message's fields by the names the message knows: camelCase ones as their snake_case
    /// field, a one-of's member (an event's `workflowExecutionStartedEventAttributes`) under its
    /// one-of field, and each one left out as its default. `own` is false for the messages the
    /// SDK decodes as proto JSON already (their names are protobuf's,
    /// `temporal.api.common.v1.Payload`): they know both spellings and their defaults. A key the
    /// message does not know is skipped, as protobuf skips a field it does not know.
    fn fields(
        map: Map<String, Value>,
        name: &str,
        known: &'static [&'static str],
        own: bool,
    ) -> Vec<(String, ProtoJson)> {
        let one_of = ONE_OFS
            .iter()
            .find(|(message, field)| *message == name && known.contains(field))
            .map(|(_, field)| *field);
        let mut out = Map::with_capacity(map.len());
        let mut members = Map::new();
        for (key, value) in map {
            if known.contains(&key.as_str()) {
                out.insert(key, value);
                continue;
            }
            let s = snake(&key);
            if known.contains(&s.as_str()) {
                out.insert(s, value);
            } else if one_of.is_some() {
                members.insert(variant(&key), value);
            } else if !own {
                out.insert(key, value);
            }
        }
        if let Some(field) = one_of.filter(|_| !members.is_empty()) {
            out.insert(field.to_string(), Value::Object(members));
        }
        let absent: Vec<&str> = if own {
            known
                .iter()
                .copied()
                .filter(|k| !out.contains_key(*k))
                .collect()
        } else {
            Vec::new()
        };
        out.into_iter()
            .map(|(k, v)| (k, given(v)))
            .chain(absent.into_iter().map(|k| (k.to_string(), ProtoJson(None))))
            .collect()
    }

    fn map<'de, V: Visitor<'de>>(map: Map<String, Value>, visitor: V) -> Result<V::Value, Error> {
        let entries: Vec<(String, ProtoJson)> =
            map.into_iter().map(|(k, v)| (k, given(v))).collect();
        visitor.visit_map(Entries(entries.into_iter(), None))
    }
}

struct Entries(std::vec::IntoIter<(String, ProtoJson)>, Option<ProtoJson>);

impl<'de> MapAccess<'de> for Entries {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.0.next() else {
            return Ok(None);
        };
        self.1 = Some(value);
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .1
            .take()
            .ok_or_else(|| de::Error::custom("a value without its key"))?;
        seed.deserialize(value)
    }
}

struct Items(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for Items {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(given(v)))
            .transpose()
    }
}

struct Variant(String, Option<Value>);

impl<'de> EnumAccess<'de> for Variant {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        let name = seed.deserialize(self.0.clone().into_deserializer())?;
        Ok((name, self))
    }
}

impl<'de> VariantAccess<'de> for Variant {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(ProtoJson(self.1))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        ProtoJson(self.1).deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        ProtoJson(self.1).deserialize_struct("", fields, visitor)
    }
}

macro_rules! as_integer {
    ($($name:ident)*) => {
        $(fn $name<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.integer(visitor)
        })*
    };
}

/// The default a left-out field holds, for the methods that do not look at a given value.
macro_rules! or_default {
    ($($name:ident => $visit:ident($default:expr);)*) => {
        $(fn $name<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0 {
                None => visitor.$visit($default),
                Some(v) => given(v).deserialize_any(visitor),
            }
        })*
    };
}

impl<'de> Deserializer<'de> for ProtoJson {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            None => visitor.visit_unit(),
            Some(Value::Array(items)) => visitor.visit_seq(Items(items.into_iter())),
            Some(Value::Object(map)) => Self::map(map, visitor),
            Some(other) => other.deserialize_any(visitor).map_err(de::Error::custom),
        }
    }

    as_integer!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8
        deserialize_u16 deserialize_u32 deserialize_u64);

    or_default! {
        deserialize_bool => visit_bool(false);
        deserialize_str => visit_str("");
        deserialize_string => visit_str("");
        deserialize_bytes => visit_bytes(&[]);
        deserialize_byte_buf => visit_bytes(&[]);
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            None => visitor.visit_f64(0.0),
            Some(Value::String(s)) => match s.as_str() {
                "NaN" => visitor.visit_f64(f64::NAN),
                "Infinity" => visitor.visit_f64(f64::INFINITY),
                "-Infinity" => visitor.visit_f64(f64::NEG_INFINITY),
                n => visitor.visit_f64(n.parse().map_err(de::Error::custom)?),
            },
            Some(v) => given(v).deserialize_any(visitor),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            None | Some(Value::Null) => visitor.visit_none(),
            Some(other) => visitor.visit_some(given(other)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    /// Bytes in a message the SDK decodes with serde's derive are a sequence of numbers; proto
    /// JSON writes them in base64.
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            None => visitor.visit_seq(Items(Vec::new().into_iter())),
            Some(Value::String(s)) => {
                let bytes =
                    base64(&s).ok_or_else(|| de::Error::custom(format!("`{s}` is not base64")))?;
                let items = bytes.into_iter().map(Value::from).collect::<Vec<_>>();
                visitor.visit_seq(Items(items.into_iter()))
            }
            Some(other) => given(other).deserialize_any(visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            None => Self::map(Map::new(), visitor),
            Some(other) => given(other).deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let own = !name.contains('.');
        match self.0 {
            None => {
                let entries = Self::fields(Map::new(), name, fields, own);
                visitor.visit_map(Entries(entries.into_iter(), None))
            }
            Some(Value::Object(map)) => {
                let entries = Self::fields(map, name, fields, own);
                visitor.visit_map(Entries(entries.into_iter(), None))
            }
            Some(other) => given(other).deserialize_any(visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // A one-of's members, gathered with any key its message did not know: the one that is
        // a variant is the member; a field the SDK does not know is skipped, as protobuf does.
        let map = match self.0 {
            Some(Value::String(s)) => return visitor.visit_enum(Variant(s, None)),
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let keys: Vec<String> = map.keys().cloned().collect();
        let mut members = map
            .into_iter()
            .filter(|(k, _)| variants.contains(&k.as_str()));
        match (members.next(), members.next()) {
            (Some((variant, value)), None) => visitor.visit_enum(Variant(variant, Some(value))),
            (Some((a, _)), Some((b, _))) => Err(de::Error::custom(format!(
                "the one-of {name} has two members, {a} and {b}: a history holds one"
            ))),
            (None, _) => Err(de::Error::custom(format!(
                "none of {keys:?} is a member of the one-of {name} ({})",
                variants.join(", ")
            ))),
        }
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char unit unit_struct tuple tuple_struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use temporalio_common::protos::temporal::api::history::v1::history_event;
    use temporalio_common::protos::temporal::api::update::v1::outcome;

    fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The CLI's proto JSON and the SDK's own JSON of one real run (a BUILD with a remediation
    /// cycle, saved by `temporal_e2e.rs` with `BATON_SAVE_HISTORY`) are the same history.
    #[test]
    fn the_cli_s_json_of_a_run_is_the_history_the_sdk_saved_of_it() {
        let cli = fixture("pair.history.json.cli.json");
        assert!(looks_like(&cli));
        let from_cli = history(&cli).unwrap();
        let own: History = serde_json::from_slice(&fixture("pair.history.json")).unwrap();
        assert!(!looks_like(&fixture("pair.history.json")));
        assert_eq!(from_cli.events.len(), own.events.len());
        for (a, b) in from_cli.events.iter().zip(&own.events) {
            assert_eq!(a, b, "event {}", b.event_id);
        }
    }

    #[test]
    fn names_numbers_and_bytes_are_read_as_proto_json_writes_them() {
        assert_eq!(
            enum_number("EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"),
            Some(enums::EventType::WorkflowExecutionStarted as i32)
        );
        assert_eq!(
            enum_number("TASK_QUEUE_KIND_NORMAL"),
            Some(enums::TaskQueueKind::Normal as i32)
        );
        assert_eq!(enum_number("BUILD"), None);
        assert_eq!(snake("workflowTaskTimeout"), "workflow_task_timeout");
        assert_eq!(
            variant("activityTaskScheduledEventAttributes"),
            "ActivityTaskScheduledEventAttributes"
        );
        assert_eq!(base64("anNvbi9wbGFpbg==").unwrap(), b"json/plain");
        assert_eq!(base64("eyJhIjoxfQ").unwrap(), br#"{"a":1}"#);
        assert_eq!(base64("a b"), None);
    }

    /// A one-of other than the event's attributes (an update's outcome) keeps its member; a
    /// field the SDK does not know is skipped.
    #[test]
    fn a_one_of_s_member_is_kept_and_an_unknown_field_skipped() {
        let text = br#"{"events":[{"eventId":"7","eventType":"EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED","fieldFromTheFuture":1,"workflowExecutionUpdateCompletedEventAttributes":{"meta":{"updateId":"u1"},"acceptedEventId":"6","outcome":{"success":{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"MQ=="}]}}}}]}"#;
        let h = history(text).unwrap();
        let Some(history_event::Attributes::WorkflowExecutionUpdateCompletedEventAttributes(a)) =
            &h.events[0].attributes
        else {
            panic!("{:?}", h.events[0].attributes)
        };
        assert_eq!(a.accepted_event_id, 6);
        assert!(
            matches!(
                a.outcome.as_ref().and_then(|o| o.value.as_ref()),
                Some(outcome::Value::Success(p)) if p.payloads[0].data == b"1"
            ),
            "{a:?}"
        );
    }

    #[test]
    fn a_value_that_is_no_number_nor_enum_name_is_an_error_naming_it() {
        let text =
            br#"{"events":[{"eventId":"x1","eventType":"EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"}]}"#;
        let e = history(text).unwrap_err().to_string();
        assert!(e.contains("`x1`"), "{e}");
    }
}
