//! Session keys: which session each main transcript file is. Claude Code names a session
//! by its file's uuid, and a copy in another workspace carries the same name and the same
//! message uuids. The file the store knew first keeps the uuid as its key; a copy beside a
//! live file gets a key of its own ([`copy_key`]); a file whose predecessor is gone (a
//! move) takes the predecessor's key and stays the same session.

use std::collections::HashMap;
use std::path::Path;

use super::{Run, Writer};
use crate::Result;
use crate::claude::{SessionFile, claude_id, copy_key};
use crate::model::NodeId;

impl Writer<'_> {
    /// Sets each file's `session_id` to its session key. `files` go oldest first, so in a
    /// store that knows neither, the older of a session and its copy keeps the uuid.
    ///
    /// A store written before copies had keys of their own holds two live files under one
    /// key (the copy's read overwrote the original's episode): the later file becomes the
    /// copy, and both are read again.
    pub(super) fn assign_keys(&self, files: &mut [SessionFile], run: &mut Run) -> Result<()> {
        let mut held: HashMap<String, usize> = HashMap::new();
        for i in 0..files.len() {
            let stem = files[i].session_id.clone();
            let path = files[i].path.to_string_lossy().into_owned();
            let recorded = self
                .graph
                .source(&path)?
                .filter(|r| !r.agent && claude_id(&r.session_id) == stem)
                .map(|r| r.session_id);
            let known = recorded.is_some();
            let mut key = match recorded {
                Some(key) => key,
                None if self.held_elsewhere(&stem, &path)? => {
                    copy_key(&stem, &files[i].project_dir)
                }
                None => stem.clone(),
            };
            if let Some(&first) = held.get(&key) {
                if known {
                    tracing::info!(
                        session = stem,
                        path,
                        "a copy of a session in another workspace: read again as its own"
                    );
                    run.reread.insert(files[first].path.clone());
                    run.reread.insert(files[i].path.clone());
                }
                key = copy_key(&stem, &files[i].project_dir);
            }
            held.insert(key.clone(), i);
            if key != stem {
                run.copies
                    .insert((files[i].project_dir.clone(), stem), key.clone());
            }
            files[i].session_id = key;
        }
        Ok(())
    }

    /// Whether the session `id` was read from a file other than `path` that is still
    /// there: `path` is then a copy of it.
    fn held_elsewhere(&self, id: &str, path: &str) -> Result<bool> {
        let Some(node) = self.graph.node(NodeId::episode(id))? else {
            return Ok(false);
        };
        Ok(node
            .episode()
            .is_some_and(|e| e.source_path != path && Path::new(&e.source_path).is_file()))
    }

    /// The key of the session `parent` (Claude Code's id, as a subagent's folder or its
    /// lines name it) whose transcript is in the project folder of `path`.
    pub(super) fn parent_key(&self, path: &Path, parent: &str, run: &Run) -> String {
        let projects = self.claude.projects_dir();
        let folder = path
            .strip_prefix(&projects)
            .ok()
            .and_then(|p| p.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        folder
            .and_then(|f| run.copies.get(&(f, parent.to_owned())).cloned())
            .unwrap_or_else(|| parent.to_owned())
    }
}
