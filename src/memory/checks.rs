//! What a client asks to remember, change or recall, checked before it is written or
//! run: content not blank and not too long, importance from 0 to 1, tags clean, a limit
//! in bounds.

use super::{MAX_CONTENT_CHARS, MAX_MEMORIES, MemoryUpdate, NewMemory, RecallQuery};
use crate::{Error, Result};

impl NewMemory {
    /// `self` with its content checked and trimmed, its importance checked, its tags
    /// cleaned ([`clean_tags`]) and its project trimmed (none when blank). Its session and
    /// what it is about are left as given: resolving them in the graph is the engine's.
    pub(crate) fn checked_fields(mut self) -> Result<NewMemory> {
        self.content = check_content(&self.content)?;
        check_importance(self.importance)?;
        self.tags = clean_tags(&self.tags)?;
        self.project = self
            .project
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty());
        Ok(self)
    }
}

impl MemoryUpdate {
    /// A copy of `self` with the content it gives checked and trimmed, the importance
    /// checked and the tags cleaned ([`clean_tags`]).
    pub(crate) fn checked(&self) -> Result<MemoryUpdate> {
        let mut update = self.clone();
        if let Some(content) = &update.content {
            update.content = Some(check_content(content)?);
        }
        if let Some(i) = update.importance {
            check_importance(i)?;
        }
        if let Some(tags) = &update.tags {
            update.tags = Some(clean_tags(tags)?);
        }
        Ok(update)
    }
}

impl RecallQuery {
    /// Its words, trimmed, once they and its limit are checked: a recall needs words.
    pub(crate) fn checked(&self) -> Result<&str> {
        let query = self.query.trim();
        if query.is_empty() {
            return Err(Error::InvalidArgument(
                "recall needs words to look for (list shows every memory)".into(),
            ));
        }
        check_memory_limit(self.limit)?;
        Ok(query)
    }
}

/// A memory's content trimmed, or why it cannot be one (blank, or over
/// [`MAX_CONTENT_CHARS`]).
fn check_content(content: &str) -> Result<String> {
    let content = content.trim();
    if content.is_empty() {
        return Err(Error::InvalidArgument("a memory needs content".into()));
    }
    let chars = content.chars().count();
    if chars > MAX_CONTENT_CHARS {
        return Err(Error::InvalidArgument(format!(
            "a memory holds at most {MAX_CONTENT_CHARS} characters, not {chars} (add a document instead)"
        )));
    }
    Ok(content.to_owned())
}

/// Why `importance` is not one, if it is not: it is from 0 to 1.
fn check_importance(importance: f32) -> Result<()> {
    if !(0.0..=1.0).contains(&importance) {
        return Err(Error::InvalidArgument(format!(
            "importance is from 0 to 1, not {importance}"
        )));
    }
    Ok(())
}

/// Why `limit` is not a recall's count or a list's page of memories, if it is not: it is
/// from 1 to [`MAX_MEMORIES`].
pub(super) fn check_memory_limit(limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_MEMORIES {
        return Err(Error::InvalidArgument(format!(
            "limit must be 1 to {MAX_MEMORIES}, not {limit}"
        )));
    }
    Ok(())
}

/// Tags trimmed and lowercased, each once, in order; a blank or over-long one is refused.
pub(super) fn clean_tags(tags: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for tag in tags {
        let tag = tag.trim().to_lowercase();
        if tag.is_empty() || tag.len() > 64 || tag.contains(',') {
            return Err(Error::InvalidArgument(format!(
                "a tag is 1 to 64 characters without commas, not {tag}",
                tag = crate::error::quote(&tag)
            )));
        }
        if !out.contains(&tag) {
            out.push(tag);
        }
    }
    Ok(out)
}
