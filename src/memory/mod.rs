//! Memories: what an agent or a person asked eywa to keep, and what sessions and
//! `CLAUDE.md` files teach. Each memory is a chain of versions in the `memories` keyspace
//! (an update or a forget adds one; none is ever deleted) and an access record (when it
//! was last recalled, how often), so that a recall is not a new version. How a memory
//! fades and when it is promoted is here ([`weight`], [`verdict`]), and so are checking
//! what a client asks to remember and ranking a recall's candidates (`recall`); writing
//! one is `crate::ingest`'s, gathering a recall's candidates from the indexes is the
//! engine's.

use eywa_storage::{Batch, Keyspace, Store};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::{DecayState, MemoryType, Timestamp};
use crate::{Error, Result};

mod checks;
use self::checks::{check_memory_limit, clean_tags};
mod recall;

/// Days after which a short-term memory not recalled keeps half its weight.
pub const STM_HALF_LIFE_DAYS: f64 = 7.0;
/// Days after which a long-term memory not recalled keeps half its weight.
pub const LTM_HALF_LIFE_DAYS: f64 = 180.0;
/// Recalls after which consolidation promotes a short-term memory to long-term.
pub const PROMOTE_AFTER_RECALLS: u32 = 3;
/// Importance from which consolidation promotes a short-term memory to long-term.
pub const PROMOTE_IMPORTANCE: f32 = 0.8;
/// Weight under which consolidation lets a memory go (forgotten, as `faded`).
pub const FADED_WEIGHT: f32 = 0.05;
/// Characters of a memory's content at most.
pub const MAX_CONTENT_CHARS: usize = 16_000;
/// The importance of a memory that is given none.
pub const DEFAULT_IMPORTANCE: f32 = 0.5;
/// Memories a recall returns at most, and a list's page at most.
pub const MAX_MEMORIES: usize = 1_000;

const DAY_MS: f64 = 86_400_000.0;

/// Key prefix of a version: `v | id (8 bytes) | version (u32, big-endian)`.
const VERSION: u8 = b'v';
/// Key prefix of a memory's latest version number: `a | id (8 bytes)`. Only writers (under
/// the one write lock) write it.
const LATEST: u8 = b'a';
/// Key prefix of a memory's access record: `r | id (8 bytes)`. Written when a memory is
/// (re)born and by recalls, which take [`ACCESS_LOCK`].
const ACCESS: u8 = b'r';

/// Serializes the read-modify-write of access records by recalls, so that none is lost.
static ACCESS_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Why a version of a memory was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    /// Remembered (the first version, or remembered again after it was forgotten).
    Remembered,
    /// Its content, importance, type or tags changed.
    Updated,
    /// Consolidation made a short-term memory long-term.
    Promoted,
    /// Forgotten on request.
    Forgotten,
    /// Consolidation let it go: its weight fell under [`FADED_WEIGHT`].
    Faded,
}

impl Change {
    /// Its name, as sent: `remembered`, `updated`, `promoted`, `forgotten`, `faded`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Remembered => "remembered",
            Change::Updated => "updated",
            Change::Promoted => "promoted",
            Change::Forgotten => "forgotten",
            Change::Faded => "faded",
        }
    }

    /// Parses a name given by [`Change::as_str`].
    pub fn parse(s: &str) -> Option<Change> {
        [
            Change::Remembered,
            Change::Updated,
            Change::Promoted,
            Change::Forgotten,
            Change::Faded,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

/// One version of a memory, as stored; read back with its access record applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryItem {
    /// 16 lowercase hex digits, from the content and project it was first remembered with.
    pub id: String,
    /// 1 for the first version, one more for each change.
    pub version: u32,
    /// What to remember, whole.
    pub content: String,
    /// STM, LTM or PROCEDURAL.
    pub memory_type: MemoryType,
    /// How much it matters, 0 to 1.
    pub importance: f32,
    /// The project it is about (a name, as sessions give it), if any.
    pub project: Option<String>,
    /// The session it came from (its id), if any: the memory is DERIVED_FROM it.
    pub session: Option<String>,
    /// Free labels, lowercased.
    pub tags: Vec<String>,
    /// Ids of the graph nodes it is ABOUT.
    pub about: Vec<String>,
    /// Where it came from when no client gave it: `handoff:<session>`, or a `CLAUDE.md`
    /// path.
    pub origin: Option<String>,
    /// Why this version was written.
    pub change: Change,
    /// What the writer said of the change, if anything.
    pub reason: Option<String>,
    /// When its first version was written.
    pub created_at: Timestamp,
    /// When this version was written.
    pub updated_at: Timestamp,
    /// When it was forgotten (this version hides it from recall), if it was.
    pub forgotten_at: Option<Timestamp>,
    /// When it was last recalled (or written), and the weight it keeps now.
    pub decay: DecayState,
    /// How many recalls returned it.
    pub recalls: u32,
}

/// When a memory was last recalled, and how often: kept apart from its versions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Access {
    pub last_access: Timestamp,
    pub recalls: u32,
}

/// What to remember.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    /// What to remember (at most [`MAX_CONTENT_CHARS`] characters).
    pub content: String,
    /// STM (the default), LTM or PROCEDURAL.
    pub memory_type: MemoryType,
    /// 0 to 1 ([`DEFAULT_IMPORTANCE`] when not given).
    pub importance: f32,
    /// The project it is about, by name.
    pub project: Option<String>,
    /// The session it came from (an id or a unique prefix).
    pub session: Option<String>,
    /// Free labels.
    pub tags: Vec<String>,
    /// Node references it is about: ids, `project:NAME`, `file:PATH`, `concept:TERM`.
    pub about: Vec<String>,
    /// Where it came from when no client gave it (see [`MemoryItem::origin`]).
    pub origin: Option<String>,
}

impl NewMemory {
    /// A memory of `content` with defaults: STM, importance 0.5, nothing else.
    pub fn new(content: impl Into<String>) -> NewMemory {
        NewMemory {
            content: content.into(),
            memory_type: MemoryType::Stm,
            importance: DEFAULT_IMPORTANCE,
            project: None,
            session: None,
            tags: Vec::new(),
            about: Vec::new(),
            origin: None,
        }
    }
}

/// A change to a memory: each field given replaces the memory's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryUpdate {
    /// New content.
    pub content: Option<String>,
    /// New type.
    pub memory_type: Option<MemoryType>,
    /// New importance.
    pub importance: Option<f32>,
    /// New tags (all of them).
    pub tags: Option<Vec<String>>,
    /// Why, kept with the version.
    pub reason: Option<String>,
}

/// What to recall.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallQuery {
    /// Words and meaning to look for.
    pub query: String,
    /// Memories to return.
    pub limit: usize,
    /// Only memories of this project.
    pub project: Option<String>,
    /// Only these types (none: all).
    pub types: Vec<MemoryType>,
    /// Only memories with all of these tags.
    pub tags: Vec<String>,
}

/// A memory recalled: how well it matches, the weight decay left it, and their product.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallHit {
    /// The memory, its access as it was before this recall.
    pub memory: MemoryItem,
    /// How well it matches the query, 0 to 1: 0.6 × its BM25 score over the best one's,
    /// plus 0.4 × the cosine similarity of its best chunk (when the model is there).
    pub relevance: f32,
    /// See [`weight`].
    pub weight: f32,
    /// relevance × weight: the order of the hits.
    pub score: f32,
}

/// Which memories to list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryFilter {
    /// Only memories of this project (its name, any case).
    pub project: Option<String>,
    /// Only these types (none: all).
    pub types: Vec<MemoryType>,
    /// Only memories with all of these tags.
    pub tags: Vec<String>,
    /// Also those forgotten.
    pub include_forgotten: bool,
}

impl MemoryFilter {
    /// Whether `m` passes.
    pub fn keeps(&self, m: &MemoryItem) -> bool {
        (self.include_forgotten || m.forgotten_at.is_none())
            && self.project.as_ref().is_none_or(|p| {
                m.project
                    .as_ref()
                    .is_some_and(|q| q.eq_ignore_ascii_case(p))
            })
            && (self.types.is_empty() || self.types.contains(&m.memory_type))
            && self.tags.iter().all(|t| m.tags.contains(t))
    }
}

/// What a consolidation did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConsolidateReport {
    /// Short-term memories made long-term (recalled often, or important).
    pub promoted: u64,
    /// Memories let go: their weight fell under [`FADED_WEIGHT`].
    pub faded: u64,
    /// Memories looked at (those not forgotten).
    pub kept: u64,
}

/// The weight a memory keeps at `now`: `(0.5 + 0.5 × importance) × 0.5^(days since its
/// last access / half-life)`, with a half-life of [`STM_HALF_LIFE_DAYS`] for STM,
/// [`LTM_HALF_LIFE_DAYS`] for LTM, and none for PROCEDURAL (it never fades).
pub fn weight(
    memory_type: MemoryType,
    importance: f32,
    last_access: Timestamp,
    now: Timestamp,
) -> f32 {
    let base = 0.5 + 0.5 * f64::from(importance.clamp(0.0, 1.0));
    let half_life = match memory_type {
        MemoryType::Stm => STM_HALF_LIFE_DAYS,
        MemoryType::Ltm => LTM_HALF_LIFE_DAYS,
        MemoryType::Procedural => return base as f32,
    };
    let days = (now.0 - last_access.0).max(0) as f64 / DAY_MS;
    (base * 0.5f64.powf(days / half_life)) as f32
}

/// What consolidation does with a memory at `now`: promote a short-term memory recalled
/// [`PROMOTE_AFTER_RECALLS`] times or of importance [`PROMOTE_IMPORTANCE`] or more, let go
/// one whose weight fell under [`FADED_WEIGHT`], or keep it as it is.
pub fn verdict(m: &MemoryItem, now: Timestamp) -> Option<Change> {
    if m.memory_type == MemoryType::Stm
        && (m.recalls >= PROMOTE_AFTER_RECALLS || m.importance >= PROMOTE_IMPORTANCE)
    {
        return Some(Change::Promoted);
    }
    (weight(m.memory_type, m.importance, m.decay.last_access, now) < FADED_WEIGHT)
        .then_some(Change::Faded)
}

/// The id of a memory of `content` in `project`: the same text remembered twice in one
/// project is one memory.
pub(crate) fn memory_id(project: Option<&str>, content: &str) -> String {
    let mut h = Sha256::new();
    h.update(project.unwrap_or("").to_lowercase().as_bytes());
    h.update([0]);
    h.update(content.trim().as_bytes());
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The 8 bytes a memory id names, or why it names none.
pub(crate) fn id_bytes(id: &str) -> Result<[u8; 8]> {
    let id = id.trim();
    let bad = || {
        Error::InvalidArgument(format!(
            "memory id {id} is not 16 hex digits",
            id = crate::error::quote(id)
        ))
    };
    if id.len() != 16 {
        return Err(bad());
    }
    u64::from_str_radix(id, 16)
        .map(u64::to_be_bytes)
        .map_err(|_| bad())
}

/// The memory id of a text-index document of a memory (`memory:<id>#memory`).
pub(crate) fn memory_of(doc: &str) -> Option<String> {
    let rest = doc.strip_prefix("memory:")?;
    let id = rest.split('#').next()?;
    (id.len() == 16).then(|| id.to_owned())
}

fn version_key(id: [u8; 8], version: u32) -> Vec<u8> {
    let mut k = vec![VERSION];
    k.extend_from_slice(&id);
    k.extend_from_slice(&version.to_be_bytes());
    k
}

fn access_key(id: [u8; 8]) -> Vec<u8> {
    let mut k = vec![ACCESS];
    k.extend_from_slice(&id);
    k
}

fn latest_key(id: [u8; 8]) -> Vec<u8> {
    let mut k = vec![LATEST];
    k.extend_from_slice(&id);
    k
}

/// The source a memory's text-index documents and chunks are filed under.
pub(crate) fn source(id: &str) -> String {
    format!("memory:{id}")
}

pub use crate::model::MEMORY_TYPE;

/// Reading memories from the store.
pub(crate) struct Memories<'s> {
    pub store: &'s Store,
}

impl Memories<'_> {
    pub(crate) fn access(&self, id: [u8; 8]) -> Result<Option<Access>> {
        Ok(self.store.get(Keyspace::Memories, &access_key(id))?)
    }

    fn latest_version(&self, id: [u8; 8]) -> Result<Option<u32>> {
        Ok(self.store.get(Keyspace::Memories, &latest_key(id))?)
    }

    /// The latest version of memory `id`, its access applied and its weight at `now`.
    pub(crate) fn latest(&self, id: &str, now: Timestamp) -> Result<Option<MemoryItem>> {
        let bytes = id_bytes(id)?;
        match self.latest_version(bytes)? {
            Some(latest) => self.version(bytes, latest, now),
            None => Ok(None),
        }
    }

    fn version(&self, id: [u8; 8], latest: u32, now: Timestamp) -> Result<Option<MemoryItem>> {
        let Some(mut m) = self
            .store
            .get::<MemoryItem>(Keyspace::Memories, &version_key(id, latest))?
        else {
            return Ok(None);
        };
        if let Some(access) = self.access(id)? {
            m.recalls = access.recalls;
            m.decay.last_access = access.last_access;
        }
        m.decay.weight = weight(m.memory_type, m.importance, m.decay.last_access, now);
        Ok(Some(m))
    }

    /// Every version of memory `id`, oldest first, as each was written.
    pub(crate) fn history(&self, id: &str) -> Result<Vec<MemoryItem>> {
        let bytes = id_bytes(id)?;
        let mut prefix = vec![VERSION];
        prefix.extend_from_slice(&bytes);
        self.store
            .scan::<MemoryItem>(Keyspace::Memories, &prefix)
            .map(|kv| Ok(kv?.1))
            .collect()
    }

    /// Every version of every memory, as stored, with its key.
    pub(crate) fn versions(&self) -> impl Iterator<Item = Result<(Vec<u8>, MemoryItem)>> + '_ {
        self.store
            .scan::<MemoryItem>(Keyspace::Memories, &[VERSION])
            .map(|kv| kv.map_err(Into::into))
    }

    /// The latest version of every memory, in no order.
    pub(crate) fn all(&self, now: Timestamp) -> Result<Vec<MemoryItem>> {
        let mut out = Vec::new();
        for kv in self.store.scan::<u32>(Keyspace::Memories, &[LATEST]) {
            let (key, latest) = kv?;
            let id: [u8; 8] = key[1..].try_into().map_err(|_| {
                Error::Storage(eywa_storage::Error::BadKey {
                    keyspace: Keyspace::Memories.name(),
                    reason: "a memory's latest-version key is not 9 bytes",
                })
            })?;
            out.extend(self.version(id, latest, now)?);
        }
        Ok(out)
    }

    /// The memories `filter` keeps (its tags cleaned first), most recently changed first,
    /// each as it is at `now`: `limit` of them from `offset`, and how many there are.
    pub(crate) fn page(
        &self,
        filter: &MemoryFilter,
        limit: usize,
        offset: usize,
        now: Timestamp,
    ) -> Result<(Vec<MemoryItem>, u64)> {
        check_memory_limit(limit)?;
        let mut filter = filter.clone();
        filter.tags = clean_tags(&filter.tags)?;
        let mut all: Vec<MemoryItem> = self
            .all(now)?
            .into_iter()
            .filter(|m| filter.keeps(m))
            .collect();
        all.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
        let total = all.len() as u64;
        Ok((all.into_iter().skip(offset).take(limit).collect(), total))
    }

    /// Adds version `m` to `batch` as the memory's latest. A memory (re)born now gets a
    /// fresh access record (last access `at`, no recalls); any other version keeps it.
    pub(crate) fn put(&self, batch: &mut Batch, m: &MemoryItem, at: Timestamp) -> Result<()> {
        let id = id_bytes(&m.id)?;
        batch.put(Keyspace::Memories, version_key(id, m.version), m)?;
        batch.put(Keyspace::Memories, latest_key(id), &m.version)?;
        if m.change == Change::Remembered {
            let access = Access {
                last_access: at,
                recalls: 0,
            };
            batch.put(Keyspace::Memories, access_key(id), &access)?;
        }
        Ok(())
    }

    /// Records that a recall returned memories `ids` at `now`.
    pub(crate) fn recalled(&self, ids: &[String], now: Timestamp) -> Result<()> {
        let _serial = ACCESS_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut batch = Batch::new();
        for id in ids {
            let bytes = id_bytes(id)?;
            if let Some(mut access) = self.access(bytes)? {
                access.last_access = now;
                access.recalls = access.recalls.saturating_add(1);
                batch.put(Keyspace::Memories, access_key(bytes), &access)?;
            }
        }
        self.store.apply(batch)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    #[test]
    fn stm_halves_in_a_week_ltm_in_half_a_year_procedural_never() {
        let t0 = Timestamp(1_700_000_000_000);
        let week = Timestamp(t0.0 + 7 * DAY);
        // Importance 1: base weight 1.
        assert!((weight(MemoryType::Stm, 1.0, t0, t0) - 1.0).abs() < 1e-6);
        assert!((weight(MemoryType::Stm, 1.0, t0, week) - 0.5).abs() < 1e-6);
        assert!((weight(MemoryType::Ltm, 1.0, t0, Timestamp(t0.0 + 180 * DAY)) - 0.5).abs() < 1e-6);
        assert!(weight(MemoryType::Ltm, 1.0, t0, week) > 0.97);
        assert_eq!(
            weight(
                MemoryType::Procedural,
                1.0,
                t0,
                Timestamp(t0.0 + 3650 * DAY)
            ),
            1.0
        );
        // Importance 0: half the base.
        assert!((weight(MemoryType::Stm, 0.0, t0, t0) - 0.5).abs() < 1e-6);
        // A clock that went back does not raise the weight.
        assert!((weight(MemoryType::Stm, 1.0, week, t0) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn ids_are_per_project_and_content_and_checked() {
        let a = memory_id(Some("shop"), "Use cents for money");
        assert_eq!(a, memory_id(Some("SHOP"), "  Use cents for money "));
        assert_ne!(a, memory_id(None, "Use cents for money"));
        assert_eq!(a.len(), 16);
        assert_eq!(
            u64::from_be_bytes(id_bytes(&a).unwrap()),
            u64::from_str_radix(&a, 16).unwrap()
        );
        for bad in ["", "xyz", "0123456789abcdefg", "0123456789abcde"] {
            assert!(id_bytes(bad).is_err(), "{bad}");
        }
    }
}
