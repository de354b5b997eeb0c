//! A session's handoff: its file's body as an agent reads it ([`body`]), the answer of
//! `eywa_get` over several ([`get_text`]), the line of facts shown under its headline
//! ([`facts`]), and how to take the session up again ([`resume_line`]). The file itself
//! is [`crate::extract::render_markdown`]; the web view lays out the same sections.

use crate::model::Handoff;

/// A handoff file's body, as the Python Eywa reads it back: the text after the
/// frontmatter's closing `---`, trimmed.
pub fn body(handoff: &Handoff) -> String {
    let file = crate::extract::render_markdown(handoff, &handoff.sections);
    match file.starts_with("---") {
        true => match file.splitn(3, "---").nth(2) {
            Some(rest) => rest.trim().to_owned(),
            None => file,
        },
        false => file,
    }
}

/// The Python eywa-mcp's `eywa_get` answer for these handoff bodies: `## Eywa: N past
/// session(s)` and the bodies, joined by `---` rules.
pub fn get_text(bodies: &[String]) -> String {
    if bodies.is_empty() {
        return "No past sessions found.".to_owned();
    }
    let n = bodies.len();
    format!(
        "## Eywa: {n} past session{}\n{}",
        if n == 1 { "" } else { "s" },
        bodies.join("\n\n---\n\n")
    )
}

/// What a handoff's headline is shown with: its duration, substance and keywords (when
/// it has any): `1h 5m · substance 2 · keywords: tokenizer, tests`.
pub fn facts(h: &Handoff) -> String {
    let mut out = format!("{} · substance {}", h.duration_label(), h.substance);
    if !h.keywords.is_empty() {
        out.push_str(&format!(" · keywords: {}", h.keywords.join(", ")));
    }
    out
}

/// `Resume: \`…\`` for a handoff Claude Code can resume; empty otherwise.
pub fn resume_line(h: &Handoff) -> String {
    crate::claude::resume_command(&h.session_id, Some(&h.cwd))
        .map(|c| format!("Resume: `{c}`"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_text_is_the_python_eywa_s() {
        assert_eq!(get_text(&[]), "No past sessions found.");
        assert_eq!(get_text(&["# A".into()]), "## Eywa: 1 past session\n# A");
        assert_eq!(
            get_text(&["# A".into(), "# B".into()]),
            "## Eywa: 2 past sessions\n# A\n\n---\n\n# B"
        );
    }
}
