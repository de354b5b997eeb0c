//! The sequence pass: FOLLOWS and CONTINUES edges derived from the order of each
//! project's sessions, kept in step with what writes queued.

use std::collections::{HashMap, HashSet};

use eywa_storage::{Batch, Keyspace};

use super::super::view::EdgeMeta;
use super::super::{EdgeRef, Graph};
use super::Pending;
use crate::Result;
use crate::model::{Edge, EdgeId, NodeId, Relation, Timestamp};

/// Docs keyspace prefix of projects whose FOLLOWS chain awaits the sequence pass. Set in
/// the batch that wrote a session, cleared in the batch of the pass: a crash in between
/// leaves the work queued, not lost.
pub(super) const SEQUENCE_PREFIX: u8 = b'q';

/// Writes per batch of the sequence pass: a batch is held in memory until it lands (on the
/// sled store of layout 3, 30,000 writes a batch took the 100k import to 753 MiB, 5,000 to
/// 630 MiB, no slower; `benches/README.md`, `cli_scale`).
const SEQUENCE_BATCH: usize = 5_000;

/// Episodes whose wanted and stored edges are compared at a time: the pass holds one
/// stretch's comparison, not the whole store's.
const SEQUENCE_STRETCH: usize = 2_000;

impl Graph {
    /// Brings FOLLOWS (a session → the previous session of a project) and CONTINUES (a
    /// resumed session → the one before it with the same slug) in step for the sessions
    /// of every project a write queued: missing edges are added, edges that no longer hold
    /// are expired. Subagent runs take no part. Returns how many edges changed.
    pub fn derive_sequences(&self) -> Result<u64> {
        self.derive_sequences_in(SEQUENCE_STRETCH)
    }

    /// [`Graph::derive_sequences`], comparing `stretch` episodes at a time.
    fn derive_sequences_in(&self, stretch: usize) -> Result<u64> {
        if !self
            .store
            .keys(Keyspace::Docs, &[SEQUENCE_PREFIX])
            .any(|_| true)
        {
            return Ok(0);
        }
        let mut generation = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The pass reads the view when it is in memory, else the adjacency index (an import
        // or a CLI ingest never pays for the whole graph). A view is installed under the
        // writer lock, so this holds for the whole pass.
        let from_view = self.view_loaded();
        let now = Timestamp::now();
        let mut projects = Vec::new();
        let mut markers = Vec::new();
        for key in self.store.keys(Keyspace::Docs, &[SEQUENCE_PREFIX]) {
            let key = key?;
            if let Some(id) = NodeId::from_slice(&key[1..]) {
                projects.push(id);
            }
            markers.push(key);
        }
        if projects.is_empty() {
            return Ok(0);
        }
        let mut sessions: Vec<(i64, NodeId, Option<String>, Vec<String>)> = Vec::new();
        // Every derived edge wanted, flat: one allocation for the pass, not one per session.
        let mut desired: Vec<Edge> = Vec::new();
        for &project in &projects {
            let mut chain: Vec<(i64, NodeId)> = Vec::new();
            let members = match from_view {
                true => self.episodes_touching(project)?,
                false => self.touching_project(project)?,
            };
            for (_, id) in members {
                let Some(node) = self.node(id)? else { continue };
                let Some(episode) = node.episode().filter(|e| e.agent.is_none()) else {
                    continue;
                };
                let start = episode.start.0;
                chain.push((start, id));
                sessions.push((start, id, episode.slug.clone(), episode.resumes.clone()));
            }
            chain.sort();
            for pair in chain.windows(2) {
                let (start, later) = pair[1];
                desired.push(Edge::new(
                    later,
                    Relation::Follows,
                    pair[0].1,
                    Timestamp(start),
                ));
            }
        }
        sessions.sort();
        sessions.dedup_by_key(|s| s.1);
        let mut last_of_slug: HashMap<&str, NodeId> = HashMap::new();
        for (start, id, slug, resumes) in &sessions {
            if let Some(slug) = slug.as_deref()
                && let Some(previous) = last_of_slug.insert(slug, *id)
            {
                desired.push(Edge::new(
                    *id,
                    Relation::Continues,
                    previous,
                    Timestamp(*start),
                ));
            }
            // A resume replays the lines of the session it continues (Q9).
            for resumed in resumes {
                desired.push(Edge::new(
                    *id,
                    Relation::Continues,
                    NodeId::episode(resumed),
                    Timestamp(*start),
                ));
            }
        }
        drop(last_of_slug);
        // Grouped by the episode each leaves, so each group is one stretch of the
        // adjacency index; an edge wanted twice (an episode following the same one in two
        // projects) is one fact, and the first of equals is kept.
        desired.sort_by_key(|e| (e.src, e.id));
        desired.dedup_by_key(|e| (e.src, e.id));
        let mut episodes: Vec<NodeId> = sessions.into_iter().map(|s| s.1).collect();
        episodes.sort_unstable();
        // Read and written a stretch of episodes at a time, so what the pass holds stays
        // bounded; only what differs from the store is written. The queue markers go with
        // the last batch, so a crash part-way leaves the pass queued, to be redone (what
        // landed is then the same fact).
        let mut changed = 0;
        let mut pending = Pending::new(Batch::new());
        let mut rest: &[Edge] = &desired;
        for stretch in episodes.chunks(stretch) {
            let mut stale: Vec<EdgeRef> = Vec::new();
            let mut fresh: Vec<&Edge> = Vec::new();
            // Edges out of each episode with a stored version (expired included), when
            // read from the index: an edge not among them is written without looking it up.
            let mut scanned: HashMap<NodeId, HashSet<EdgeId>> = HashMap::new();
            {
                let view = match from_view {
                    true => Some(self.view()?),
                    false => None,
                };
                for &episode in stretch {
                    let wanted = rest.iter().take_while(|e| e.src == episode).count();
                    let (edges, tail) = rest.split_at(wanted);
                    rest = tail;
                    // (edge, valid_from, valid_to) of each current derived edge out of
                    // `episode`.
                    let current: Vec<(EdgeRef, i64, i64)> = if let Some(view) = &view {
                        view.adjacent(episode, true, false)
                            .filter(|(m, _, _)| {
                                matches!(m.relation, Relation::Follows | Relation::Continues)
                            })
                            .map(|(m, other, _): (EdgeMeta, _, _)| {
                                let edge = EdgeRef {
                                    id: m.id,
                                    src: episode,
                                    relation: m.relation,
                                    dst: other.id,
                                };
                                (edge, m.valid_from, m.valid_to)
                            })
                            .collect()
                    } else {
                        let links = self.links_under(Keyspace::EdgesBySrc, episode, None)?;
                        scanned.insert(episode, links.iter().map(|l| l.edge).collect());
                        links
                            .iter()
                            .filter(|l| {
                                l.adjacency.is_current()
                                    && matches!(l.relation, Relation::Follows | Relation::Continues)
                            })
                            .map(|l| (l.edge_ref(), l.adjacency.valid_from, l.adjacency.valid_to))
                            .collect()
                    };
                    stale.extend(
                        current
                            .iter()
                            .map(|m| m.0)
                            .filter(|edge| !edges.iter().any(|e| e.id == edge.id)),
                    );
                    // Derived edges carry no evidence and full confidence: the same id and
                    // window is the same fact.
                    fresh.extend(edges.iter().filter(|edge| {
                        !current.iter().any(|&(current, from, to)| {
                            current.id == edge.id
                                && from == edge.valid_from.0
                                && to == edge.valid_to.map_or(i64::MAX, |t| t.0)
                        })
                    }));
                }
            }
            pending.scanned = scanned;
            for edge in stale {
                if let Some(old) = self.edge(edge)? {
                    self.expire_edge(&mut pending, &old, now)?;
                    changed += 1;
                }
                if pending.batch.len() >= SEQUENCE_BATCH {
                    self.commit_part(&mut pending, &mut generation)?;
                }
            }
            for edge in fresh {
                self.put_edge(&mut pending, edge.clone(), now)?;
                changed += 1;
                if pending.batch.len() >= SEQUENCE_BATCH {
                    self.commit_part(&mut pending, &mut generation)?;
                }
            }
        }
        debug_assert!(rest.is_empty(), "every wanted edge leaves a listed episode");
        for key in markers {
            pending.batch.delete(Keyspace::Docs, key);
        }
        self.commit(pending, &mut generation)?;
        let mut queued = self
            .queued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for project in &projects {
            queued.remove(project);
        }
        Ok(changed)
    }

    /// Commits what `pending` holds and leaves it empty but for its scans: the pass
    /// writes each edge once, so what landed is never looked up again and the scans still
    /// tell the rest apart.
    fn commit_part(&self, pending: &mut Pending, generation: &mut u64) -> Result<()> {
        let mut full = std::mem::replace(pending, Pending::new(Batch::new()));
        pending.scanned = std::mem::take(&mut full.scanned);
        self.commit(full, generation)
    }

    /// The episodes with a current TOUCHED edge to `project` (the only relation from an
    /// episode to a project), from the adjacency index, each once (the `i64` is 0: callers
    /// read each node).
    fn touching_project(&self, project: NodeId) -> Result<Vec<(i64, NodeId)>> {
        let mut others: Vec<(i64, NodeId)> = self
            .links_under(Keyspace::EdgesByDst, project, Some(Relation::Touched))?
            .into_iter()
            .filter(|l| l.adjacency.is_current())
            .map(|l| (0, l.other))
            .collect();
        others.sort_unstable();
        others.dedup();
        Ok(others)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use eywa_storage::Config;

    use super::*;
    use crate::graph::{Direction, SourceRecord};
    use crate::model::{
        Edge, Entity, EntityType, Episode, Node, NodeKind, SessionFacts, Timestamp,
    };

    /// An imported session: an episode of ten minutes on `day` of March 2026 that
    /// TOUCHED `projects`.
    fn facts(short: &str, day: u32, projects: &[&str]) -> SessionFacts {
        let session = format!("eywa:{short}");
        let id = NodeId::episode(&session);
        let start = Timestamp::parse(&format!("2026-03-{day:02}")).unwrap();
        let end = Timestamp(start.0 + 10 * 60_000);
        let mut entities = Vec::new();
        let mut edges = Vec::new();
        for name in projects {
            let project = NodeId::project(&format!("eywa:{name}"));
            entities.push(Node {
                id: project,
                name: (*name).to_owned(),
                kind: NodeKind::Entity(Entity {
                    entity_type: EntityType::Project,
                    aliases: Vec::new(),
                    path: None,
                }),
                content: None,
                properties: BTreeMap::new(),
                created_at: start,
                updated_at: end,
                doc_refs: Vec::new(),
            });
            let mut edge = Edge::new(id, Relation::Touched, project, start);
            edge.valid_to = Some(end);
            edges.push(edge);
        }
        let title = format!("Work {short}");
        let episode = Episode {
            session_id: session,
            short_id: short.to_owned(),
            source_path: String::new(),
            project: projects
                .first()
                .map(|p| (*p).to_owned())
                .unwrap_or_default(),
            project_path: String::new(),
            cwd: String::new(),
            git_branch: None,
            models: Vec::new(),
            version: None,
            start,
            end,
            active_minutes: 10,
            user_messages: 0,
            assistant_messages: 0,
            prompts: 0,
            tool_calls: 0,
            title: title.clone(),
            substance: 2,
            agent: None,
            tokens: Default::default(),
            slug: None,
            compactions: Vec::new(),
            resumes: Vec::new(),
            user: "ana".to_owned(),
            machine: "laptop".to_owned(),
        };
        SessionFacts {
            episode: Node::from_episode(id, title, episode),
            handoff: None,
            entities,
            edges,
        }
    }

    /// Writes imported sessions: (short id, day of March 2026, projects).
    fn write(graph: &Graph, sessions: &[(&str, u32, &[&str])]) {
        let mut written = Vec::new();
        for &(short, day, projects) in sessions {
            let facts = facts(short, day, projects);
            let record = SourceRecord {
                path: format!("index#{short}"),
                session_id: format!("eywa:{short}"),
                episode: Some(facts.episode.id),
                ..SourceRecord::default()
            };
            written.push((vec![facts], record));
        }
        let sources: Vec<(&[SessionFacts], &SourceRecord)> = written
            .iter()
            .map(|(facts, record)| (facts.as_slice(), record))
            .collect();
        graph.write_new_sources(&sources).unwrap();
    }

    /// Every derived edge out of every episode, expired ones too: (relation, target,
    /// valid from, valid to, current, versions stored).
    type Derived = BTreeMap<NodeId, Vec<(Relation, NodeId, i64, i64, bool, usize)>>;

    fn derived(graph: &Graph, shorts: &[&str]) -> Derived {
        let mut out = Derived::new();
        for short in shorts {
            let id = NodeId::episode(&format!("eywa:{short}"));
            let mut edges: Vec<_> = graph
                .stored_links(id, Direction::Out)
                .unwrap()
                .into_iter()
                .filter(|l| matches!(l.relation, Relation::Follows | Relation::Continues))
                .map(|l| {
                    let versions = graph.edge_versions(l.edge_ref()).unwrap().len();
                    let window = (l.adjacency.valid_from, l.adjacency.valid_to);
                    (
                        l.relation,
                        l.other,
                        window.0,
                        window.1,
                        l.adjacency.is_current(),
                        versions,
                    )
                })
                .collect();
            edges.sort();
            out.insert(id, edges);
        }
        out
    }

    /// A pass that compares a few episodes at a time writes what one that compares them
    /// all at once writes, new edges and expired ones alike.
    #[test]
    fn a_pass_in_stretches_derives_what_one_pass_does() {
        let first: &[(&str, u32, &[&str])] = &[
            ("a0000001", 1, &["shop"]),
            ("a0000002", 3, &["shop", "docs"]),
            ("a0000003", 5, &["docs"]),
            ("a0000004", 7, &["shop"]),
            ("a0000005", 9, &["shop", "docs"]),
            ("a0000006", 11, &["docs"]),
            ("a0000007", 13, &["shop"]),
        ];
        // Sessions found later that ran in between: links are redrawn, old ones expire.
        let later: &[(&str, u32, &[&str])] = &[
            ("a0000008", 2, &["shop"]),
            ("a0000009", 8, &["shop", "docs"]),
            ("a0000010", 12, &["docs"]),
        ];
        let shorts: Vec<&str> = first.iter().chain(later).map(|h| h.0).collect();
        let run = |stretch: usize| {
            let graph = Graph::open(Config::new().temporary(true).open().unwrap()).unwrap();
            write(&graph, first);
            assert!(graph.derive_sequences_in(stretch).unwrap() > 0);
            let before = derived(&graph, &shorts);
            write(&graph, later);
            assert!(graph.derive_sequences_in(stretch).unwrap() > 0);
            assert!(graph.check().unwrap().is_empty());
            (before, derived(&graph, &shorts))
        };
        let (whole_before, whole_after) = run(usize::MAX);
        let a2 = NodeId::episode("eywa:a0000002");
        let a1 = NodeId::episode("eywa:a0000001");
        let follows_a1 = |d: &Derived| {
            d[&a2]
                .iter()
                .any(|e| e.0 == Relation::Follows && e.1 == a1 && e.4)
        };
        assert!(follows_a1(&whole_before));
        // a0000008 ran between them: a0000002 now follows it, the old link expired.
        assert!(!follows_a1(&whole_after));
        assert!(whole_after[&a2].iter().any(|e| e.1 == a1 && !e.4));
        for stretch in [1, 2, 3] {
            assert_eq!(
                run(stretch),
                (whole_before.clone(), whole_after.clone()),
                "stretch {stretch}"
            );
        }
    }
}
