//! Write groups: main session files staged to land in one transaction, and what waits for
//! them to land.

use super::Run;
use super::Writer;
use crate::Result;
use crate::archive::Archived;
use crate::extract::SessionFacts;
use crate::graph::SourceRecord;
use crate::model::Handoff;

/// Main session files staged to be written in one atomic batch: the cost of a batch (a
/// journal write) is paid once for many small files. What must
/// follow a file's commit (counting its queued chunks, removing blobs it replaced, writing
/// its handoff file) waits here until the group lands; dropped, the group writes nothing.
#[derive(Default)]
pub(super) struct Group<'e> {
    pub(super) writes: Option<crate::graph::WriteGroup<'e>>,
    staged: Option<crate::semantic::Staged<'e>>,
    /// Files staged since the last commit.
    pub(super) files: usize,
    /// Each staged file's earlier source record and its new archive.
    pub(super) retired: Vec<(Option<SourceRecord>, Archived)>,
    pub(super) handoff_files: Vec<Handoff>,
}

impl<'e> Group<'e> {
    /// The chunk queue writes of the group, under the embedder's write lock from the first.
    pub(super) fn staged(
        &mut self,
        writer: &Writer<'e>,
    ) -> Result<&mut crate::semantic::Staged<'e>> {
        if self.staged.is_none() {
            self.staged = Some(writer.semantic()?.begin());
        }
        Ok(self.staged.as_mut().expect("just set"))
    }

    pub(super) fn holds(&self, source: &str, facts: &[SessionFacts]) -> bool {
        self.writes.as_ref().is_some_and(|w| w.holds(source, facts))
    }

    pub(super) fn is_full(&self) -> bool {
        self.files >= GROUP_FILES
            || self
                .writes
                .as_ref()
                .is_some_and(|w| w.writes() >= GROUP_WRITES)
    }
}

impl<'e> Writer<'_> {
    /// Lands what `group` holds, in one transaction, then what waited for it.
    pub(super) fn commit_group(&'e self, group: &mut Group<'e>, run: &mut Run) -> Result<()> {
        if let Some(writes) = group.writes.take() {
            writes.commit()?;
        }
        if let Some(staged) = group.staged.take() {
            self.semantic()?.applied(staged);
        }
        group.files = 0;
        for (known, archived) in std::mem::take(&mut group.retired) {
            self.archive().retire(known.as_ref(), &archived)?;
        }
        run.handoff_files.append(&mut group.handoff_files);
        if run.handoff_files.len() >= HANDOFF_FILES_AT_ONCE {
            self.flush_handoff_files(run)?;
        }
        Ok(())
    }
}

/// Files in one write group at most.
const GROUP_FILES: usize = 256;
/// Writes in one write group at most (a few large files fill it before 64 small ones).
const GROUP_WRITES: usize = 10_000;
/// Handoff files written together.
const HANDOFF_FILES_AT_ONCE: usize = 256;
