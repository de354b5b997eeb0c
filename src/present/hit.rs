//! A search hit: the CLI's lines ([`lines`]), the markdown block the MCP tools and the
//! prompt hook hand an agent ([`markdown`]), and the terms of its score ([`terms`]) that
//! `--explain` joins on one line and the web view's "why" panel lists.

use std::borrow::Cow;

use super::{UNTITLED, one_line, percent};
use crate::model::{Timestamp, age};
use crate::retrieve::search::{SearchHit, SearchResults};
use crate::retrieve::{Ranked, Signals};

/// A hit's title: a passage of a project memory file has no session; a PDF's passage
/// says its page.
pub fn title(h: &SearchHit) -> Cow<'_, str> {
    let base = match (h.title.is_empty(), h.session_id.is_empty()) {
        (false, _) => h.title.as_str(),
        (true, true) => "(no session)",
        (true, false) => UNTITLED,
    };
    match (&h.document_id, h.page) {
        (Some(_), Some(page)) => Cow::Owned(format!("{base} (page {page})")),
        _ => Cow::Borrowed(base),
    }
}

/// Each hit of `results` with its share of the best one's score, in whole percent.
pub fn ranked(results: &SearchResults) -> impl Iterator<Item = (u32, &SearchHit)> {
    let best = results.hits.first().map_or(0.0, |h| h.score);
    results
        .hits
        .iter()
        .map(move |h| (percent(h.score, best), h))
}

/// The CLI's lines for hit number `n`: rank, share, session, title, project, age and
/// score; the passage's type and text on one line; the resume command; with `explain`,
/// every term of the score and the chunk to read.
pub fn lines(n: usize, share: u32, h: &SearchHit, now: Timestamp, explain: bool) -> Vec<String> {
    let short = crate::claude::short_id(&h.session_id);
    let mut out = vec![format!(
        "{n:>2}. [{share}%] {short}  {}  [{}] {} · {:.2}",
        title(h),
        h.project,
        age(h.timestamp, now),
        h.score
    )];
    let agent = h
        .agent
        .as_deref()
        .map(|a| format!(" ({a})"))
        .unwrap_or_default();
    out.push(format!("    {}{agent}: {}", h.kind, one_line(&h.snippet)));
    if let Some(resume) = &h.resume_command {
        out.push(format!("    {resume}"));
    }
    if explain {
        out.push(format!("    {}", explain_line(&h.signals)));
        if let Some(id) = &h.chunk_id {
            out.push(format!("    eywa chunk {id}"));
        }
    }
    out
}

/// A hit for an agent: title, project, age, session, type and score; its passage on one
/// line; its document and resume command when it has them.
pub fn markdown(h: &SearchHit, now: Timestamp) -> String {
    let session = match h.session_id.is_empty() {
        true => String::new(),
        false => format!(" · session `{}`", crate::claude::short_id(&h.session_id)),
    };
    let mut out = format!(
        "**{}** [{}] {}{session} · {} · score {:.2}\n   > {}",
        title(h),
        h.project,
        age(h.timestamp, now),
        h.kind,
        h.score,
        one_line(&h.snippet)
    );
    if let Some(doc) = &h.document_id {
        out.push_str(&format!("\n   document `{doc}`"));
    }
    if let Some(resume) = &h.resume_command {
        out.push_str(&format!("\n   resume: `{resume}`"));
    }
    out
}

/// What a search found, for an agent: a header naming the query and mode, the notices,
/// then each hit numbered with its share of the best score.
pub fn results_markdown(query: &str, results: &SearchResults, now: Timestamp) -> String {
    let n = results.hits.len();
    let mut out = format!(
        "## eywa search: {n} hit{} for {query:?} ({})\n",
        if n == 1 { "" } else { "s" },
        results.mode
    );
    for notice in &results.notices {
        out.push_str(&format!("> {notice}\n"));
    }
    for (i, (share, h)) in ranked(results).enumerate() {
        out.push_str(&format!("\n{}. [{share}%] {}\n", i + 1, markdown(h, now)));
    }
    if results.hits.is_empty() {
        out.push_str("\nNo session matches.\n");
    }
    out
}

/// One term of a hit's score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Term {
    /// Its short name, as `--explain` writes it.
    pub name: &'static str,
    /// Its name in full, as a table heads it.
    pub label: &'static str,
    /// What it holds.
    pub value: TermValue,
}

/// What a term holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TermValue {
    /// A ranking's place and score; `None` when it did not find the hit.
    Rank(Option<Ranked>),
    /// The fused retrieval score the bonuses add to.
    Base(f64),
    /// A bonus added to it.
    Bonus(f64),
    /// A share the best passage's lexical score was raised by (already in retrieval).
    Raised(f64),
    /// The hit's score.
    Total(f64),
}

impl TermValue {
    /// The value as a table cell shows it.
    pub fn cell(&self) -> String {
        match self {
            TermValue::Rank(Some(r)) => format!("#{} ({:.3})", r.rank, r.score),
            TermValue::Rank(None) => "not found".to_owned(),
            TermValue::Base(v) | TermValue::Total(v) => format!("{v:.4}"),
            TermValue::Bonus(v) => format!("+{v:.3}"),
            TermValue::Raised(v) => format!("×{:.3}", 1.0 + v),
        }
    }
}

/// Every term of a hit's score, in the order they add up. The graph distance behind
/// `proximity` is the signals' `distance`.
pub fn terms(s: &Signals) -> [Term; 12] {
    let term = |name, label, value| Term { name, label, value };
    [
        term("lexical", "Lexical (BM25)", TermValue::Rank(s.lexical)),
        term("semantic", "Semantic (cosine)", TermValue::Rank(s.semantic)),
        term("retrieval", "Retrieval", TermValue::Base(s.retrieval)),
        term(
            "same project",
            "Same project",
            TermValue::Bonus(s.same_project),
        ),
        term("shared", "Shared entities", TermValue::Bonus(s.shared)),
        term(
            "proximity",
            "Graph proximity",
            TermValue::Bonus(s.proximity),
        ),
        term("recency", "Recency", TermValue::Bonus(s.recency)),
        term("date", "Near the date asked", TermValue::Bonus(s.date)),
        term(
            "speaker",
            "Said by whom it asks about",
            TermValue::Raised(s.speaker),
        ),
        term("time", "Says a time", TermValue::Raised(s.time)),
        term(
            "preference",
            "States a taste",
            TermValue::Raised(s.preference),
        ),
        term("total", "Total", TermValue::Total(s.total)),
    ]
}

/// Every term of a hit's score on one line: the rankings, the retrieval score, the
/// bonuses that count, the graph distance, and the total.
pub fn explain_line(s: &Signals) -> String {
    let mut parts = Vec::new();
    for t in terms(s) {
        match t.value {
            TermValue::Rank(Some(r)) => {
                parts.push(format!("{} #{} ({:.3})", t.name, r.rank, r.score));
            }
            TermValue::Rank(None) => parts.push(format!("{} -", t.name)),
            TermValue::Base(v) => parts.push(format!("{} {v:.4}", t.name)),
            TermValue::Bonus(v) if v > 0.0 => parts.push(format!("+{} {v:.3}", t.name)),
            TermValue::Bonus(_) => {}
            TermValue::Raised(v) if v > 0.0 => {
                parts.push(format!("{} ×{:.2}", t.name, 1.0 + v));
            }
            TermValue::Raised(_) => {}
            TermValue::Total(v) => {
                if let Some(d) = s.distance {
                    parts.push(format!("{d} hops"));
                }
                parts.push(format!("= {v:.4}"));
            }
        }
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit() -> SearchHit {
        SearchHit {
            session_id: "0b5e6f1c-0000-4000-8000-000000000001".into(),
            title: "Fix the tokenizer".into(),
            project: "eywa".into(),
            score: 0.5,
            kind: "prompt".into(),
            snippet: "the **tokenizer**\n  splits".into(),
            timestamp: Timestamp(0),
            agent: None,
            chunk_id: None,
            document_id: None,
            page: None,
            matches: 1,
            signals: Signals::default(),
            resume_command: Some("cd /w && claude --resume 0b5e6f1c".into()),
            user: "ana".into(),
            machine: "laptop".into(),
        }
    }

    #[test]
    fn a_hit_reads_the_same_on_every_front() {
        let h = hit();
        let now = Timestamp(86_400_000);
        assert_eq!(
            lines(1, 100, &h, now, false),
            [
                " 1. [100%] 0b5e6f1c  Fix the tokenizer  [eywa] 1 day ago · 0.50",
                "    prompt: the **tokenizer** splits",
                "    cd /w && claude --resume 0b5e6f1c",
            ]
        );
        assert_eq!(
            markdown(&h, now),
            "**Fix the tokenizer** [eywa] 1 day ago · session `0b5e6f1c` · prompt · score 0.50\n   \
             > the **tokenizer** splits\n   resume: `cd /w && claude --resume 0b5e6f1c`"
        );
    }

    #[test]
    fn titles_say_what_a_hit_lacks() {
        let mut h = hit();
        h.title.clear();
        assert_eq!(title(&h), UNTITLED);
        h.session_id.clear();
        assert_eq!(title(&h), "(no session)");
        h.title = "Manual".into();
        h.document_id = Some("d1".into());
        h.page = Some(3);
        assert_eq!(title(&h), "Manual (page 3)");
    }

    #[test]
    fn the_explanation_names_every_term_that_counts() {
        let s = Signals {
            lexical: Some(Ranked {
                rank: 1,
                score: 2.0,
            }),
            semantic: None,
            retrieval: 0.03,
            recency: 0.01,
            distance: Some(2),
            date: 0.5,
            time: 0.25,
            total: 0.04,
            ..Signals::default()
        };
        assert_eq!(
            explain_line(&s),
            "lexical #1 (2.000) · semantic - · retrieval 0.0300 · +recency 0.010 · +date 0.500 · \
             time ×1.25 · 2 hops · = 0.0400"
        );
        let cells: Vec<String> = terms(&s).iter().map(|t| t.value.cell()).collect();
        assert_eq!(cells[0], "#1 (2.000)");
        assert_eq!(cells[1], "not found");
        assert_eq!(cells[3], "+0.000");
        assert_eq!(cells[9], "×1.250");
    }
}
