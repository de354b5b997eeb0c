//! `/stats`: what the store holds, its tiers and caches, the embedding backlog, the last
//! ingest's skipped files, and tokens per day and per project drawn as bar charts.

use maud::{Markup, html};

use crate::engine::{IngestReport, Stats};
use crate::model::Timestamp;

use super::pages::{count, layout, segment, when};
use super::projects::Overview;

/// Days the tokens-per-day chart covers, back from the last day a session started.
const CHART_DAYS: usize = 60;
/// Projects the tokens-per-project chart shows.
const CHART_PROJECTS: usize = 15;

/// Bytes as people read them: 512 B, 3.4 KiB, 12.0 MiB, 1.2 GiB.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Vertical bars, one per `(label, value)`, each with its label and value on hover.
fn columns(bars: &[(String, u64)]) -> Markup {
    const WIDTH: f64 = 720.0;
    const HEIGHT: f64 = 160.0;
    let most = bars.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1) as f64;
    let step = WIDTH / bars.len().max(1) as f64;
    html! {
        svg.chart viewBox={ "0 0 " (WIDTH) " " (HEIGHT + 16.0) } role="img" aria-label="Tokens per day" {
            @for (i, (label, value)) in bars.iter().enumerate() {
                @let h = (*value as f64 / most * HEIGHT).max(if *value > 0 { 1.0 } else { 0.0 });
                rect.bar x=(format!("{:.1}", i as f64 * step + 1.0)) y=(format!("{:.1}", HEIGHT - h))
                    width=(format!("{:.1}", (step - 2.0).max(1.0))) height=(format!("{h:.1}")) {
                    title { (label) ": " (count(*value)) " tokens" }
                }
            }
            @if let (Some((first, _)), Some((last, _))) = (bars.first(), bars.last()) {
                text.axis x="0" y=(HEIGHT + 14.0) { (first) }
                text.axis.end x=(WIDTH) y=(HEIGHT + 14.0) { (last) }
            }
        }
    }
}

/// Horizontal bars, one per project, linking to its page.
fn rows(bars: &[(String, u64)]) -> Markup {
    let most = bars.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1) as f64;
    html! {
        table.bars {
            @for (name, value) in bars {
                tr {
                    th { a href={ "/projects/" (segment(name)) } { (name) } }
                    td {
                        svg.hbar viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label=(format!("{name}: {value} tokens")) {
                            rect.bar x="0" y="0" height="10" width=(format!("{:.2}", *value as f64 / most * 100.0)) {}
                        }
                    }
                    td.num { (count(*value)) }
                }
            }
        }
    }
}

/// The last `CHART_DAYS` days up to the last one a session started, every day present.
fn recent_days(days: &[(chrono::NaiveDate, u64)]) -> Vec<(String, u64)> {
    let Some((last, _)) = days.last() else {
        return Vec::new();
    };
    let first = *last - chrono::Duration::days(CHART_DAYS as i64 - 1);
    let mut out = Vec::with_capacity(CHART_DAYS);
    let mut day = first;
    let mut given = days.iter().skip_while(|(d, _)| *d < first).peekable();
    while day <= *last {
        let value = match given.peek() {
            Some((d, v)) if *d == day => {
                given.next();
                *v
            }
            _ => 0,
        };
        out.push((day.to_string(), value));
        day += chrono::Duration::days(1);
    }
    out
}

/// The last ingest: when, what it read, and the files it read in part or not at all.
fn last_ingest(last: Option<&(Timestamp, std::sync::Arc<IngestReport>)>, now: Timestamp) -> Markup {
    html! {
        h2 { "Last ingest" }
        @match last {
            None => p.empty { "None by this server yet." },
            Some((at, r)) => {
                p {
                    "Ended " (when(*at, now)) ": "
                    (count(r.files_read)) " of " (count(r.files_scanned)) " session files read, "
                    (count(r.agent_files_read)) " subagent files, "
                    (bytes(r.bytes_read)) "; "
                    (count(r.files_skipped)) " files read in part or not at all."
                }
                @if !r.skipped_files.is_empty() {
                    table.list {
                        thead { tr { th { "File" } th.num { "Lines skipped" } th { "Why" } } }
                        tbody {
                            @for f in &r.skipped_files {
                                tr {
                                    td { code { (f.path) } }
                                    td.num { @if f.lines == 0 { "all" } @else { (count(f.lines)) } }
                                    td { (f.reason) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The page.
pub(super) fn page(
    stats: &Stats,
    overview: &Overview,
    last: Option<&(Timestamp, std::sync::Arc<IngestReport>)>,
    now: Timestamp,
) -> Markup {
    let c = &stats.counts;
    let t = &stats.tiers;
    let sem = &stats.semantic;
    let mut by_project: Vec<(String, u64)> = overview
        .projects
        .iter()
        .map(|p| (p.name.clone(), p.tokens))
        .collect();
    by_project.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    by_project.truncate(CHART_PROJECTS);
    layout(
        "Stats",
        html! {
            h1 { "Stats" }
            table.list.facts {
                tr { th { "Sessions" } td.num { (count(c.sessions)) } }
                tr { th { "Subagent runs" } td.num { (count(c.agents)) } }
                tr { th { "Episodes" } td.num { (count(c.episodes)) } }
                tr { th { "Entities" } td.num { (count(c.entities)) } }
                tr { th { "Current edges" } td.num { (count(c.edges)) } }
                tr { th { "Source files" } td.num { (count(c.sources)) } }
                tr { th { "Lines skipped" } td.num { (count(c.skipped_lines)) } }
            }
            h2 { "Tokens per day" }
            @let days = recent_days(&overview.days);
            @if days.is_empty() { p.empty { "No sessions yet." } } @else { (columns(&days)) }
            h2 { "Tokens per project" }
            @if by_project.is_empty() { p.empty { "No projects yet." } } @else { (rows(&by_project)) }
            h2 { "Semantic memory" }
            p {
                @match &sem.model {
                    Some(model) => { "Model " code { (model) } ": " }
                    None => { "No model: searches are lexical. " }
                }
                (count(sem.vectors)) " chunks embedded, "
                strong { (count(sem.backlog)) } " waiting"
                @if sem.rebuilding { " (the index is being rebuilt)" }
                "."
            }
            @if let Some(why) = &sem.unavailable { p.notice { (why) } }
            h2 { "Tiers" }
            table.list {
                thead { tr { th { "Tier" } th.num { "Items" } th.num { "Size" } } }
                tbody {
                    tr { td { "Warm (fjall keyspaces, on disk)" } td.num { "" } td.num { (bytes(t.warm_disk_bytes)) } }
                    tr { td { "Warm chunks" } td.num { (count(t.warm_chunks)) } td.num { (bytes(t.warm_bytes)) } }
                    tr { td { "Cold chunks" } td.num { (count(t.cold_chunks)) } td.num { (bytes(t.cold_raw_bytes)) } }
                    tr {
                        td { "Cold blobs (zstd, " (format!("{:.1}", t.compression_ratio())) "×)" }
                        td.num { (count(t.blobs)) }
                        td.num { (bytes(t.blob_stored_bytes)) " of " (bytes(t.blob_raw_bytes)) }
                    }
                }
            }
            h2 { "Caches" }
            table.list {
                thead { tr { th { "Cache" } th.num { "Entries" } th.num { "Hits" } th.num { "Misses" } th.num { "Hit rate" } th.num { "Evictions" } } }
                tbody {
                    @for cache in &stats.caches {
                        tr {
                            td { (cache.name) }
                            td.num { (count(cache.len as u64)) " / " (count(cache.capacity as u64)) }
                            td.num { (count(cache.hits)) }
                            td.num { (count(cache.misses)) }
                            td.num { (format!("{:.0}%", cache.hit_rate() * 100.0)) }
                            td.num { (count(cache.evictions)) }
                        }
                    }
                }
            }
            (last_ingest(last, now))
            @if stats.failed_document_count > 0 {
                h2 { "Documents that could not be read" }
                p { (count(stats.failed_document_count)) " in all; the latest:" }
                ul {
                    @for f in &stats.failed_documents {
                        li { code { (f.path) } ": " (f.reason) }
                    }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 * 1024 * 1024), "5.0 MiB");
    }

    #[test]
    fn the_day_chart_has_every_day_up_to_the_last() {
        let d = |s: &str| s.parse::<chrono::NaiveDate>().unwrap();
        let days = vec![
            (d("2025-01-01"), 5),
            (d("2026-03-01"), 7),
            (d("2026-03-03"), 9),
        ];
        let recent = recent_days(&days);
        assert_eq!(recent.len(), CHART_DAYS);
        assert_eq!(recent.last().unwrap(), &("2026-03-03".to_owned(), 9));
        assert_eq!(recent[CHART_DAYS - 2], ("2026-03-02".to_owned(), 0));
        assert_eq!(recent[CHART_DAYS - 3], ("2026-03-01".to_owned(), 7));
        assert!(recent.iter().all(|(day, _)| day.as_str() > "2025-12-31"));
        assert!(recent_days(&[]).is_empty());
    }
}
