//! The `get` index kept in step with the store: loaded on first use (from its files in
//! the index tier when they describe the store, else rebuilt from it), marked behind
//! before a write run writes handoffs, and brought up to date with what the run wrote
//! (a new delta, or a new base) once it is over.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::Result;
use crate::graph::Graph;
use crate::index::HandoffFiles;
use crate::model::Handoff;
use crate::retrieve::{HandoffIndex, Rebuilt};

/// The `get` index of one store, and how far its files are behind it.
#[derive(Debug)]
pub(crate) struct GetIndex {
    /// As loaded or last brought up to date.
    loaded: RwLock<Option<Arc<HandoffIndex>>>,
    /// Its files in the index tier.
    files: HandoffFiles,
    /// Whether this process's writes have left the files behind the store.
    behind: Mutex<Behind>,
}

/// How far the `get` index files are behind the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behind {
    /// They describe it.
    No,
    /// Handoffs were written since the files held this handoff generation.
    Since(u64),
    /// Handoffs were written and not all of them are known: rebuild from the store.
    Lost,
}

impl GetIndex {
    /// The index whose files are in `index_dir`, loaded on first use.
    pub(crate) fn new(index_dir: &Path) -> GetIndex {
        GetIndex {
            loaded: RwLock::new(None),
            files: HandoffFiles::new(index_dir),
            behind: Mutex::new(Behind::No),
        }
    }

    /// The index: as loaded, else from its files when they describe `graph`'s store, else
    /// rebuilt from the store (and saved).
    pub(crate) fn index(&self, graph: &Graph) -> Result<Arc<HandoffIndex>> {
        if let Some(index) = self.loaded() {
            return Ok(index);
        }
        let generation = graph.handoff_generation()?;
        let index = match self.files.load() {
            Some(index) if index.generation() == generation => Arc::new(index),
            _ => self.rebuild(graph, generation)?,
        };
        let mut slot = self.loaded.write().unwrap_or_else(PoisonError::into_inner);
        Ok(slot.get_or_insert(index).clone())
    }

    fn loaded(&self) -> Option<Arc<HandoffIndex>> {
        self.loaded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The index of every handoff in the store, saved unless a write is under way (it saves
    /// the index when it is done).
    fn rebuild(&self, graph: &Graph, generation: u64) -> Result<Arc<HandoffIndex>> {
        let index = HandoffIndex::build(&graph.handoffs()?, generation);
        let behind = self.behind.lock().unwrap_or_else(PoisonError::into_inner);
        if *behind == Behind::No {
            self.files.save(&index, Rebuilt::Base)?;
        }
        Ok(Arc::new(index))
    }

    /// Call before writing a handoff: the files are marked as behind the store.
    pub(crate) fn will_change(&self, graph: &Graph) -> Result<()> {
        let mut behind = self.behind.lock().unwrap_or_else(PoisonError::into_inner);
        if *behind == Behind::No {
            let since = graph.handoff_generation()?;
            self.files.mark_stale()?;
            *behind = Behind::Since(since);
        }
        Ok(())
    }

    /// Call once a write run is over and flushed, with every handoff it wrote: the index
    /// takes them in (a new delta, or a new base) and its files are saved again. Whether
    /// the index changed (results ranked by the one before are stale).
    pub(crate) fn changed(&self, graph: &Graph, changed: &[Handoff]) -> Result<bool> {
        let mut behind = self.behind.lock().unwrap_or_else(PoisonError::into_inner);
        let since = match *behind {
            Behind::No => return Ok(false),
            Behind::Since(generation) => Some(generation),
            Behind::Lost => None,
        };
        let generation = graph.handoff_generation()?;
        let before = since.and_then(|since| {
            self.loaded()
                .filter(|i| i.generation() == since)
                .or_else(|| {
                    self.files
                        .load_behind()
                        .filter(|i| i.generation() == since)
                        .map(Arc::new)
                })
                // No handoff was ever written before: the index was empty.
                .or_else(|| (since == 0).then(|| Arc::new(HandoffIndex::build(&[], 0))))
        });
        let (index, rebuilt) = match before {
            Some(before) => before.with_changes(changed, generation),
            None => (
                HandoffIndex::build(&graph.handoffs()?, generation),
                Rebuilt::Base,
            ),
        };
        self.files.save(&index, rebuilt)?;
        *behind = Behind::No;
        *self.loaded.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(index));
        Ok(true)
    }

    /// Call when a write run failed after writing handoffs it could not report: the index
    /// is rebuilt from the store next time.
    pub(crate) fn lost(&self) {
        let mut behind = self.behind.lock().unwrap_or_else(PoisonError::into_inner);
        if *behind != Behind::No {
            *behind = Behind::Lost;
            *self.loaded.write().unwrap_or_else(PoisonError::into_inner) = None;
        }
    }

    /// Rebuilds the index from the store (after writes made past the engine).
    pub(crate) fn reload(&self, graph: &Graph) -> Result<()> {
        let generation = graph.handoff_generation()?;
        let index = self.rebuild(graph, generation)?;
        *self.loaded.write().unwrap_or_else(PoisonError::into_inner) = Some(index);
        Ok(())
    }
}
