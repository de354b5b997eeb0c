//! Prompts and replies rendered as Markdown, safely: raw HTML in a transcript is shown as
//! text, a link goes only to the web or to a mail address, and an image (which the page's
//! policy would refuse to load) becomes a link to it.

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// Texts longer than this (bytes) are shown as written, not parsed: a 5 MB tool dump
/// pasted into a prompt should not hold the page up.
const MAX_MARKDOWN: usize = 200_000;

/// Whether a link may go to `url`: the web, a mail address, a place on this page or
/// this server. No `javascript:`, `data:` or other scheme.
fn safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    match lower.split_once(':') {
        // A colon after a slash, `?` or `#` is not a scheme's.
        Some((scheme, _)) if !scheme.contains(['/', '?', '#']) => {
            matches!(scheme, "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// `url` when the page may link to it, else an empty destination.
fn safe(url: CowStr<'_>) -> CowStr<'_> {
    if safe_url(&url) {
        url
    } else {
        CowStr::Borrowed("")
    }
}

/// `text` as HTML from Markdown, or `None` when it is too long to parse (the caller shows
/// it as written).
pub(super) fn render(text: &str) -> Option<String> {
    if text.len() > MAX_MARKDOWN {
        return None;
    }
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            dest_url,
            title,
            id,
            ..
        }) => Event::Start(Tag::Link {
            link_type: LinkType::Inline,
            dest_url: safe(dest_url),
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    html::push_html(&mut out, events);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_and_raw_html_stays_text() {
        let html = render(
            "**bold** and `code`\n\n<script>alert(1)</script>\n\nx <img src=x onerror=alert(2)> y",
        )
        .unwrap();
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>code</code>"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(2)&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
    }

    #[test]
    fn links_go_only_to_the_web_or_mail_and_images_become_links() {
        let html = render(
            "[a](javascript:alert(1)) [b](JavaScript:alert(1)) [c](data:text/html,x) \
             [d](https://example.com/x) [e](mailto:a@b.c) [f](/sessions/abc) [g](#top) \
             ![pic](https://example.com/p.png) ![bad](javascript:alert(3))",
        )
        .unwrap();
        assert!(!html.to_lowercase().contains("javascript:"), "{html}");
        assert!(!html.contains("data:text"), "{html}");
        assert!(
            html.contains(r#"<a href="https://example.com/x">d</a>"#),
            "{html}"
        );
        assert!(html.contains(r#"<a href="mailto:a@b.c">e</a>"#), "{html}");
        assert!(html.contains(r#"<a href="/sessions/abc">f</a>"#), "{html}");
        assert!(html.contains(r##"<a href="#top">g</a>"##), "{html}");
        assert!(
            html.contains(r#"<a href="https://example.com/p.png">pic</a>"#),
            "{html}"
        );
        assert!(!html.contains("<img"), "{html}");
    }

    #[test]
    fn a_text_too_long_to_parse_is_left_to_be_shown_as_written() {
        assert!(render(&"x".repeat(MAX_MARKDOWN + 1)).is_none());
    }
}
