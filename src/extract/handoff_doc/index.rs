//! `handoff-index.json` (seed 000): `meta`, `handoffs` keyed by short id, and the two
//! inverted indexes `by_project` and `by_keyword`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{HandoffDocError, parse_date, parse_duration};
use crate::model::Handoff;

#[cfg(test)]
mod tests;

/// One entry of `handoffs` in an index file: the searchable fields, not the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// The key of the entry: the 8-character short id.
    pub short_id: String,
    pub date: NaiveDate,
    pub headline: String,
    pub projects: Vec<String>,
    pub keywords: Vec<String>,
    /// 1 when the entry has none, as Eywa reads it.
    pub substance: u8,
    pub duration_minutes: Option<u32>,
}

/// The `handoff-index.json` of `handoffs`, exactly seed 000's shape.
///
/// Eywa keys handoffs by the 8-character short id, so two sessions sharing one collide:
/// the newer is kept (later date, then later `started_at`, then greater full session id,
/// whatever the input order), and `meta`, `by_project` and `by_keyword` count only the
/// kept one. Objects are filled in sorted key order and id lists are sorted and
/// deduplicated, so the same handoffs give the same bytes. Empty project and keyword names
/// are not indexed; an unknown duration is `null`.
pub fn build_index(handoffs: &[Handoff], last_updated: DateTime<Utc>) -> Value {
    let rank = |h: &Handoff| (h.date, h.started_at, h.session_id.clone());
    let mut kept: BTreeMap<&str, &Handoff> = BTreeMap::new();
    for h in handoffs {
        let slot = kept.entry(h.short_id.as_str()).or_insert(h);
        if rank(h) > rank(slot) {
            *slot = h;
        }
    }
    let mut entries = Map::new();
    let mut by_project: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut by_keyword: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (&id, h) in &kept {
        entries.insert(
            id.to_owned(),
            json!({
                "date": day(h.date),
                "headline": h.headline,
                "projects": h.projects,
                "keywords": h.keywords,
                "substance": h.substance,
                "duration_minutes": h.duration_minutes,
            }),
        );
        for (map, names) in [
            (&mut by_project, &h.projects),
            (&mut by_keyword, &h.keywords),
        ] {
            for name in names.iter().filter(|n| !n.is_empty()) {
                map.entry(name.as_str()).or_default().insert(id);
            }
        }
    }
    let first = kept.values().map(|h| h.date).min();
    let last = kept.values().map(|h| h.date).max();
    let date_range = match (first, last) {
        (Some(first), Some(last)) => vec![day(first), day(last)],
        _ => Vec::new(),
    };
    let inverted = |map: BTreeMap<&str, BTreeSet<&str>>| -> Map<String, Value> {
        map.into_iter()
            .map(|(name, ids)| (name.to_owned(), json!(ids)))
            .collect()
    };
    let mut meta = Map::new();
    meta.insert(
        "last_updated".into(),
        json!(last_updated.to_rfc3339_opts(SecondsFormat::Micros, false)),
    );
    meta.insert("handoff_count".into(), json!(kept.len()));
    meta.insert("date_range".into(), json!(date_range));
    let mut index = Map::new();
    index.insert("meta".into(), Value::Object(meta));
    index.insert("handoffs".into(), Value::Object(entries));
    index.insert("by_project".into(), Value::Object(inverted(by_project)));
    index.insert("by_keyword".into(), Value::Object(inverted(by_keyword)));
    Value::Object(index)
}

fn day(date: NaiveDate) -> String {
    date.format("%Y-%m-%d").to_string()
}

/// The entries of a `handoff-index.json` (ours or the Python Eywa's), ordered by date, then
/// short id. `meta`, `by_project` and `by_keyword` are derived data and not read. Lenient
/// where Eywa was: a missing headline is empty, missing lists are empty, a missing
/// substance is 1, a missing or `null` duration unknown, unknown fields ignored.
pub fn parse_index(value: &Value) -> Result<Vec<IndexEntry>, HandoffDocError> {
    let handoffs = value
        .get("handoffs")
        .and_then(Value::as_object)
        .ok_or_else(|| HandoffDocError::BadIndex("no `handoffs` object".into()))?;
    let mut entries = handoffs
        .iter()
        .map(|(id, entry)| parse_entry(id, entry))
        .collect::<Result<Vec<_>, _>>()?;
    entries.sort_by(|a, b| (a.date, &a.short_id).cmp(&(b.date, &b.short_id)));
    Ok(entries)
}

/// Reads a `handoff-index.json` as it streams in, handing each entry of `handoffs` to
/// `entry` (a bad entry as its error, and reading goes on), in file order; everything
/// else is skipped unread. Memory stays that of one entry, whatever the file's size.
/// Fails when the file is not JSON or has no `handoffs` object.
pub fn read_index(
    reader: impl std::io::Read,
    entry: &mut dyn FnMut(Result<IndexEntry, HandoffDocError>),
) -> Result<(), HandoffDocError> {
    use serde::Deserializer as _;
    use serde::de::{IgnoredAny, MapAccess, Visitor};

    struct Top<'a>(&'a mut dyn FnMut(Result<IndexEntry, HandoffDocError>));
    struct Handoffs<'a>(&'a mut dyn FnMut(Result<IndexEntry, HandoffDocError>));

    impl<'de> Visitor<'de> for Top<'_> {
        type Value = bool;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object with a `handoffs` object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut found = false;
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "handoffs" && !found {
                    map.next_value_seed(Handoffs(&mut *self.0))?;
                    found = true;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }

    impl<'de> serde::de::DeserializeSeed<'de> for Handoffs<'_> {
        type Value = ();

        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Handoffs<'_> {
        type Value = ();

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of handoffs keyed by short id")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some((id, value)) = map.next_entry::<String, Value>()? {
                (self.0)(parse_entry(&id, &value));
            }
            Ok(())
        }
    }

    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(reader));
    let found = de
        .deserialize_map(Top(entry))
        .map_err(|e| HandoffDocError::BadIndex(e.to_string()))?;
    de.end()
        .map_err(|e| HandoffDocError::BadIndex(e.to_string()))?;
    if !found {
        return Err(HandoffDocError::BadIndex("no `handoffs` object".into()));
    }
    Ok(())
}

fn parse_entry(id: &str, entry: &Value) -> Result<IndexEntry, HandoffDocError> {
    let bad = |problem: String| HandoffDocError::BadIndexEntry {
        id: id.to_owned(),
        problem,
    };
    let entry = entry
        .as_object()
        .ok_or_else(|| bad("not an object".into()))?;
    let field = |key: &str| entry.get(key).filter(|v| !v.is_null());
    let date = match field("date") {
        None => return Err(bad("no date".into())),
        Some(v) => v
            .as_str()
            .and_then(parse_date)
            .ok_or_else(|| bad(format!("bad date {v}: expected YYYY-MM-DD")))?,
    };
    let substance = match field("substance") {
        None => 1,
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .filter(|n| *n <= 2)
            .and_then(|n| u8::try_from(n).ok())
            .ok_or_else(|| bad(format!("bad substance {v}: expected 0, 1 or 2")))?,
    };
    let duration_minutes = match field("duration_minutes") {
        None => None,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f.round() as u32))
            .or_else(|| v.as_str().and_then(parse_duration)),
    };
    let strings = |key: &str| -> Vec<String> {
        match field(key) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            _ => Vec::new(),
        }
    };
    Ok(IndexEntry {
        short_id: id.to_owned(),
        date,
        headline: field("headline")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        projects: strings("projects"),
        keywords: strings("keywords"),
        substance,
        duration_minutes,
    })
}
