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
#[derive(Debug, Default, PartialEq, Eq)]
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

/// The overview, kept up to date with the episodes written since it was built: every
/// main session is read once, when the server first needs it (or its log of writes no
/// longer reaches back), and then only the sessions written since.
#[derive(Default)]
pub(super) struct Cache(Mutex<Option<Built>>);

/// The overview and what it was added up from.
struct Built {
    /// Where the graph's log of episodes written stood when it was last brought up to date.
    cursor: u64,
    /// What each main session adds.
    sessions: HashMap<NodeId, Share>,
    overview: Arc<Overview>,
}

/// What one main session adds to the overview.
#[derive(Debug, Clone)]
struct Share {
    /// Its project's name as it names it; empty for none.
    project: String,
    project_path: String,
    start: Timestamp,
    end: Timestamp,
    tokens: u64,
}

impl Share {
    /// What `node` adds, if it is a main session.
    fn of(node: &crate::model::Node) -> Option<Share> {
        let e = node.episode().filter(|e| e.agent.is_none())?;
        Some(Share {
            project: e.project.clone(),
            project_path: e.project_path.clone(),
            start: e.start,
            end: e.end,
            tokens: total(&e.tokens),
        })
    }
}

impl Cache {
    /// The overview as of the store's current sessions. One caller brings it up to date
    /// at a time; the others wait for it and take what it made.
    pub(super) fn get(&self, engine: &Engine) -> Result<Arc<Overview>> {
        let graph = engine.graph();
        let mut cached = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(built) = cached.as_mut()
            && let Some((written, cursor)) = graph.episodes_written_since(built.cursor)
        {
            if !written.is_empty() {
                for id in written {
                    match graph.node(id)?.as_deref().and_then(Share::of) {
                        Some(share) => built.sessions.insert(id, share),
                        None => built.sessions.remove(&id),
                    };
                }
                built.overview = Arc::new(overview(&built.sessions));
            }
            built.cursor = cursor;
            return Ok(built.overview.clone());
        }
        // Taken first: what is written during the scan is read again next time.
        let cursor = graph.episodes_cursor();
        let mut sessions = HashMap::new();
        for node in graph.sessions_newest_first()? {
            let node = node?;
            if let Some(share) = Share::of(&node) {
                sessions.insert(node.id, share);
            }
        }
        let overview = Arc::new(overview(&sessions));
        *cached = Some(Built {
            cursor,
            sessions,
            overview: overview.clone(),
        });
        Ok(overview)
    }
}

/// Every project a main session worked in, most recently active first, named as its most
/// recent session names it, with its sessions most recently active first; and the tokens
/// of each day.
fn overview(sessions: &HashMap<NodeId, Share>) -> Overview {
    // Most recently active first, as the store's activity index lists them.
    let mut newest: Vec<(&NodeId, &Share)> = sessions.iter().collect();
    newest.sort_unstable_by(|a, b| (b.1.end, b.0).cmp(&(a.1.end, a.0)));
    let mut by_name: HashMap<String, ProjectRow> = HashMap::new();
    let mut listed: HashMap<String, Vec<NodeId>> = HashMap::new();
    let mut days: std::collections::BTreeMap<chrono::NaiveDate, u64> = Default::default();
    for (id, e) in newest {
        let day = days.entry(e.start.date()).or_default();
        *day = day.saturating_add(e.tokens);
        // Sessions with no project have no page of their own to list them on.
        if e.project.is_empty() {
            continue;
        }
        // By name without regard to case: a project's page finds its sessions so.
        let key = e.project.to_lowercase();
        listed.entry(key.clone()).or_default().push(*id);
        let row = by_name.entry(key).or_insert_with(|| ProjectRow {
            name: e.project.clone(),
            paths: Vec::new(),
            sessions: 0,
            last_activity: e.end,
            tokens: 0,
        });
        row.sessions += 1;
        row.tokens = row.tokens.saturating_add(e.tokens);
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
    Overview {
        projects: rows,
        days: days.into_iter().collect(),
        sessions: listed,
    }
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::EngineConfig;

    /// Writes (or appends to) the transcript `id` of a session in `/w/<project>`, one
    /// prompt and one reply at `at`.
    fn write(claude: &Path, project: &str, id: &str, at: &str) {
        let dir = claude.join(format!("projects/-w-{project}"));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |kind: &str, text: &str| {
            format!(
                r#"{{"type":"{kind}","cwd":"/w/{project}","timestamp":"{at}","message":{{"id":"m{at}","content":[{{"type":"text","text":"{text}"}}]}}}}"#
            )
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("{id}.jsonl")))
            .unwrap();
        use std::io::Write;
        writeln!(file, "{}", line("user", "Fix the tokenizer")).unwrap();
        writeln!(file, "{}", line("assistant", "Fixed the tokenizer.")).unwrap();
    }

    #[test]
    fn the_overview_kept_up_to_date_is_the_one_built_anew() {
        let claude = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            "0b5e6f1c-0000-4000-8000-000000000001",
            "0b5e6f1c-0000-4000-8000-000000000002",
            "0b5e6f1c-0000-4000-8000-000000000003",
        );
        write(claude.path(), "demo", a, "2026-01-05T10:00:00Z");
        write(claude.path(), "shop", b, "2026-01-06T10:00:00Z");
        let engine = Engine::open(EngineConfig::temporary(claude.path())).unwrap();
        engine.ingest().unwrap();
        let cache = Cache::default();
        let first = cache.get(&engine).unwrap();
        let names: Vec<&str> = first.projects.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["shop", "demo"]);
        // The graph's index of session ids, built now and kept in step from here on.
        assert_eq!(
            engine
                .graph()
                .sources_of_sessions("0b5e6f1c")
                .unwrap()
                .len(),
            2
        );

        // A session in a new project, and the oldest one taken up again later.
        write(claude.path(), "cart", c, "2026-01-07T10:00:00Z");
        write(claude.path(), "demo", a, "2026-01-08T10:00:00Z");
        engine.ingest().unwrap();
        let kept = cache.get(&engine).unwrap();
        let anew = Cache::default().get(&engine).unwrap();
        assert_eq!(*kept, *anew);
        let names: Vec<&str> = kept.projects.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["demo", "cart", "shop"]);
        assert_eq!(kept.days.len(), 3, "{:?}", kept.days);

        // A session written since the graph's index of ids was built is found by it.
        let found = engine.graph().sources_of_sessions(c).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].session_id, c);

        // Nothing written since: the same overview, not made again.
        assert!(Arc::ptr_eq(&kept, &cache.get(&engine).unwrap()));
    }
}
