//! What the web view lists: projects with their sessions' counts and tokens, and a page
//! of a project's sessions with what their episodes and handoffs add.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::Result;
use crate::engine::Engine;
use crate::library::SessionSummary;
use crate::model::{NodeId, Timestamp, TokenUsage};

/// One project of the home page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ProjectRow {
    /// Its name (the last folder of its path): what `/projects/{name}` takes.
    pub name: String,
    /// The paths sessions worked in under that name.
    pub paths: Vec<String>,
    /// Main sessions under that name.
    pub sessions: u64,
    /// When the latest of them was last active.
    pub last_activity: Timestamp,
    /// Tokens of all of them (input, output and cache).
    pub tokens: u64,
}

/// What a project page shows of a session besides its summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SessionExtras {
    /// Tokens of the session (input, output and cache).
    pub tokens: u64,
    /// Minutes of work: its span less pauses over 30 minutes.
    pub active_minutes: u32,
    /// Its handoff's "what happened" bullets.
    pub bullets: Vec<String>,
}

/// All of a session's tokens.
pub(super) fn total(t: &TokenUsage) -> u64 {
    t.input
        .saturating_add(t.output)
        .saturating_add(t.cache_creation)
        .saturating_add(t.cache_read)
}

/// What every main session adds up to: the projects, and tokens by the day sessions
/// started (UTC).
#[derive(Debug, Default)]
pub(super) struct Overview {
    pub projects: Vec<ProjectRow>,
    /// Each day a session started, oldest first, with its sessions' tokens.
    pub days: Vec<(chrono::NaiveDate, u64)>,
    /// Each project's sessions, most recently active first, by its name lowercased: a
    /// project's page reads only the sessions it shows.
    pub sessions: HashMap<String, Vec<NodeId>>,
}

impl Overview {
    /// The sessions of the project named `name` (any case), most recently active first.
    pub(super) fn sessions_of(&self, name: &str) -> Option<&[NodeId]> {
        self.sessions.get(&name.to_lowercase()).map(Vec::as_slice)
    }
}

/// The overview, computed once per generation of the store's sources: every main
/// session is read to count them, which a page should not do on every request.
#[derive(Default)]
pub(super) struct Cache(Mutex<Option<(u64, Arc<Overview>)>>);

impl Cache {
    /// The overview as of the store's current sources.
    pub(super) fn get(&self, engine: &Engine) -> Result<Arc<Overview>> {
        let generation = engine.graph().sources_generation()?;
        let cached = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((g, overview)) = &*cached
            && *g == generation
        {
            return Ok(overview.clone());
        }
        drop(cached);
        let overview = Arc::new(overview(engine)?);
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((generation, overview.clone()));
        Ok(overview)
    }
}

/// Every project a main session worked in, most recently active first, named as its most
/// recent session names it; and the tokens of each day.
fn overview(engine: &Engine) -> Result<Overview> {
    let mut by_name: HashMap<String, ProjectRow> = HashMap::new();
    let mut sessions: HashMap<String, Vec<NodeId>> = HashMap::new();
    let mut days: std::collections::BTreeMap<chrono::NaiveDate, u64> = Default::default();
    for node in engine.graph().sessions_newest_first()? {
        let node = node?;
        let Some(e) = node.episode() else { continue };
        let day = days.entry(e.start.date()).or_default();
        *day = day.saturating_add(total(&e.tokens));
        // Sessions with no project have no page of their own to list them on.
        if e.project.is_empty() {
            continue;
        }
        // By name without regard to case: a project's page finds its sessions so.
        let key = e.project.to_lowercase();
        sessions.entry(key.clone()).or_default().push(node.id);
        let row = by_name.entry(key).or_insert_with(|| ProjectRow {
            name: e.project.clone(),
            paths: Vec::new(),
            sessions: 0,
            last_activity: e.end,
            tokens: 0,
        });
        row.sessions += 1;
        row.tokens = row.tokens.saturating_add(total(&e.tokens));
        row.last_activity = row.last_activity.max(e.end);
        if !e.project_path.is_empty() && !row.paths.contains(&e.project_path) {
            row.paths.push(e.project_path.clone());
        }
    }
    let mut rows: Vec<ProjectRow> = by_name.into_values().collect();
    for row in &mut rows {
        row.paths.sort();
    }
    rows.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(Overview {
        projects: rows,
        days: days.into_iter().collect(),
        sessions,
    })
}

/// Each listed session's tokens, working minutes and handoff bullets.
pub(super) fn session_rows(
    engine: &Engine,
    sessions: &[SessionSummary],
) -> Result<Vec<SessionExtras>> {
    let graph = engine.graph();
    sessions
        .iter()
        .map(|s| {
            let mut extras = SessionExtras::default();
            if let Some(node) = graph.node(NodeId::episode(&s.session_id))?
                && let Some(e) = node.episode()
            {
                extras.tokens = total(&e.tokens);
                extras.active_minutes = e.active_minutes;
            }
            if let Some(handoff) = graph.handoff(&s.session_id)? {
                extras.bullets = handoff.sections.what_happened;
            }
            Ok(extras)
        })
        .collect()
}
