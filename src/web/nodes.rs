//! `/nodes/{ref}`: a node of the graph as it is, or as it was: what touched it, its
//! neighbours with the evidence for each fact, and a drawing of its neighbourhood whose
//! nodes are links.

use std::collections::HashMap;
use std::f64::consts::TAU;

use maud::{Markup, html};

use crate::engine::Engine;
use crate::engine::{AsOf, EdgeFilter, Neighbor, Touch, Walk};
use crate::model::{Edge, Node, NodeId, Timestamp};

use super::Failure;
use super::pages::{layout, segment, when};

/// Neighbours and touching sessions a node's page lists at most.
const LISTED: usize = 200;
/// Nodes the drawing holds at most.
const DRAWN: usize = 60;
/// Deepest walk the drawing takes.
pub(super) const MAX_DEPTH: u32 = 3;

/// A node page's query: how far to walk, and the graph as of which times.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct Params {
    depth: Option<String>,
    valid: Option<String>,
    recorded: Option<String>,
}

/// What a node page shows, read from the engine.
pub(super) enum Read {
    /// The reference names several nodes: each, to pick from.
    Several(Vec<std::sync::Arc<Node>>),
    One(Box<Shown>),
}

/// One node's page.
pub(super) struct Shown {
    node: std::sync::Arc<Node>,
    touches: Vec<Touch>,
    neighbors: Vec<Neighbor>,
    walk: Walk,
    /// The session id of each episode an edge's evidence names.
    sessions: HashMap<NodeId, String>,
    depth: u32,
    as_of: AsOf,
    params: Params,
}

/// A time given in a form: RFC 3339 or a date.
fn time(name: &str, value: &Option<String>) -> Result<Option<Timestamp>, Failure> {
    match value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => Timestamp::parse(v).map(Some).ok_or_else(|| {
            Failure::BadRequest(format!(
                "{name} must be a date (2026-01-05) or an RFC 3339 time, got {}",
                crate::error::quote(v)
            ))
        }),
    }
}

impl Params {
    /// The walk's depth (1 when not given), or why it is not one.
    fn depth(&self) -> Result<u32, Failure> {
        match self
            .depth
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
        {
            None => Ok(1),
            Some(d) => d
                .parse()
                .ok()
                .filter(|d| (1..=MAX_DEPTH).contains(d))
                .ok_or_else(|| {
                    Failure::BadRequest(format!(
                        "depth must be 1 to {MAX_DEPTH}, got {}",
                        crate::error::quote(d)
                    ))
                }),
        }
    }

    /// Reads what the page of `reference` shows.
    pub(super) fn read(self, engine: &Engine, reference: &str) -> Result<Read, Failure> {
        let depth = self.depth()?;
        let as_of = AsOf {
            valid: time("valid", &self.valid)?,
            recorded: time("recorded", &self.recorded)?,
        };
        let mut nodes = engine.resolve(reference)?;
        if nodes.len() > 1 {
            return Ok(Read::Several(nodes));
        }
        let node = nodes.remove(0);
        let id = node.id.to_string();
        let filter = EdgeFilter {
            as_of,
            ..EdgeFilter::default()
        };
        let touches = match node.episode() {
            Some(_) => Vec::new(),
            None => engine.what_touched(&id, &filter, LISTED)?,
        };
        let (_, neighbors) = engine.neighbors(&id, &filter, LISTED)?;
        let walk = engine.walk(&id, depth, DRAWN, &filter)?;
        let mut sessions = HashMap::new();
        let evidence = neighbors.iter().flat_map(|n| &n.edge.evidence);
        for doc in evidence
            .map(|d| d.doc_id)
            .chain(touches.iter().map(|t| t.episode.id))
        {
            if sessions.contains_key(&doc) {
                continue;
            }
            if let Some(e) = engine.graph().node(doc)?.as_ref().and_then(|n| n.episode()) {
                sessions.insert(doc, e.session_id.clone());
            }
        }
        Ok(Read::One(Box::new(Shown {
            node,
            touches,
            neighbors,
            walk,
            sessions,
            depth,
            as_of,
            params: self,
        })))
    }
}

/// Where a node's page is.
fn href(id: NodeId) -> String {
    format!("/nodes/{id}")
}

/// A node as a link: its kind, then its name.
fn link(node: &Node) -> Markup {
    html! {
        a href=(href(node.id)) { span.kind { (node.kind.label()) } " " (node.name) }
    }
}

/// Where one piece of evidence was seen: the message in its session, when it is one.
fn evidence(shown: &Shown, edge: &Edge) -> Markup {
    html! {
        @for doc in &edge.evidence {
            @if let Some(session) = shown.sessions.get(&doc.doc_id) {
                @let anchor = doc.chunk_id.strip_prefix("msg:").map(|m| format!("?at={}#m-{m}", segment(m))).unwrap_or_default();
                a.evidence href={ "/sessions/" (segment(session)) (anchor) } title=(doc.chunk_id) {
                    (session.get(..8).unwrap_or(session))
                }
                " "
            } @else {
                code.evidence { (doc.chunk_id) } " "
            }
        }
    }
}

/// The as-of form: how deep to walk, and which valid and record time to see.
fn controls(shown: &Shown) -> Markup {
    let p = &shown.params;
    html! {
        form.asof method="get" action=(href(shown.node.id)) {
            label { "Depth "
                select name="depth" {
                    @for d in 1..=MAX_DEPTH { option value=(d) selected[d == shown.depth] { (d) } }
                }
            }
            label title="What held in the world at this time" { "Valid at "
                input type="text" name="valid" value=[p.valid.as_deref()] placeholder="2026-01-05" size="12";
            }
            label title="What eywa knew at this time" { "Recorded at "
                input type="text" name="recorded" value=[p.recorded.as_deref()] placeholder="now" size="12";
            }
            button type="submit" { "Show" }
            @if !shown.as_of.is_current() { " " a href=(href(shown.node.id)) { "Now" } }
        }
    }
}

/// The walk drawn as rings around the node: one ring per hop, each node a link.
fn drawing(walk: &Walk) -> Markup {
    const SIZE: f64 = 640.0;
    let centre = SIZE / 2.0;
    let deepest = walk.steps.iter().map(|s| s.depth).max().unwrap_or(0).max(1);
    let mut at: HashMap<NodeId, (f64, f64)> = HashMap::new();
    for depth in 0..=deepest {
        let ring: Vec<_> = walk.steps.iter().filter(|s| s.depth == depth).collect();
        let radius = (centre - 60.0) * f64::from(depth) / f64::from(deepest);
        for (i, step) in ring.iter().enumerate() {
            let angle = TAU * i as f64 / ring.len().max(1) as f64 + f64::from(depth) * 0.4;
            at.insert(
                step.node.id,
                (centre + radius * angle.cos(), centre + radius * angle.sin()),
            );
        }
    }
    let position = |id: &NodeId| at.get(id).copied().unwrap_or((centre, centre));
    html! {
        svg.graph viewBox={ "0 0 " (SIZE) " " (SIZE) } role="img" aria-label="The node's neighbourhood" {
            @for step in &walk.steps {
                @if let Some((edge, from)) = &step.via {
                    @let (x1, y1) = position(from);
                    @let (x2, y2) = position(&step.node.id);
                    line.edge x1=(format!("{x1:.1}")) y1=(format!("{y1:.1}")) x2=(format!("{x2:.1}")) y2=(format!("{y2:.1}")) {
                        title { (edge.relation.as_str()) }
                    }
                }
            }
            @for step in &walk.steps {
                @let (x, y) = position(&step.node.id);
                a href=(href(step.node.id)) {
                    circle class={ "node d" (step.depth) } cx=(format!("{x:.1}")) cy=(format!("{y:.1}")) r=(if step.depth == 0 { 9 } else { 6 }) {
                        title { (step.node.kind.label()) ": " (step.node.name) }
                    }
                    text.label x=(format!("{:.1}", x + 9.0)) y=(format!("{:.1}", y + 4.0)) {
                        (step.node.name.chars().take(28).collect::<String>())
                    }
                }
            }
        }
        @if walk.truncated { p.lead { "The first " (walk.steps.len()) " nodes of the walk are drawn." } }
    }
}

/// The page of the nodes a reference names, to pick one.
pub(super) fn several(reference: &str, nodes: &[std::sync::Arc<Node>]) -> Markup {
    layout(
        reference,
        html! {
            h1 { (reference) }
            p.lead { (nodes.len()) " nodes have this name: pick one." }
            ul { @for n in nodes { li { (link(n)) " " code.id { (n.id) } } } }
        },
    )
}

/// One node's page.
pub(super) fn page(shown: &Shown, now: Timestamp) -> Markup {
    let node = &shown.node;
    layout(
        &node.name,
        html! {
            h1 { span.kind { (node.kind.label()) } " " (node.name) }
            p.ids { code.id { (node.id) } }
            @if let Some(e) = node.episode() {
                p { a href={ "/sessions/" (segment(&e.session_id)) } { "Read the session" } }
            }
            @if let Some(content) = &node.content { div.text { (content) } }
            (controls(shown))
            @if !shown.as_of.is_current() {
                p.notice {
                    "The graph as it was"
                    @if let Some(v) = shown.as_of.valid { " in the world at " (v.to_rfc3339()) }
                    @if let Some(r) = shown.as_of.recorded { " as eywa knew it at " (r.to_rfc3339()) }
                    "."
                }
            }
            section {
                h2 { "Neighbourhood" }
                (drawing(&shown.walk))
            }
            @if !shown.touches.is_empty() {
                section.timeline {
                    h2 { "What touched it" }
                    ol.touches data-rows {
                        @for t in &shown.touches {
                            li {
                                @if let Some(e) = t.episode.episode() {
                                    (when(e.start, now)) " · "
                                    a href={ "/sessions/" (segment(&e.session_id)) } {
                                        @if e.title.is_empty() { (e.session_id) } @else { (e.title) }
                                    }
                                } @else { (link(&t.episode)) }
                                " · " code { (t.edge.relation.as_str()) }
                                " · confidence " (format!("{:.2}", t.edge.confidence))
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Neighbours" }
                @if shown.neighbors.is_empty() {
                    p.empty { "None, as of these times." }
                } @else {
                    table.list.neighbors {
                        thead { tr { th { "Relation" } th { "Node" } th.num { "Confidence" } th { "Valid" } th { "Evidence" } } }
                        tbody data-rows {
                            @for n in &shown.neighbors {
                                tr {
                                    td {
                                        code { (n.edge.relation.as_str()) }
                                        " " (if n.edge.src == node.id { "→" } else { "←" })
                                    }
                                    td { (link(&n.node)) }
                                    td.num { (format!("{:.2}", n.edge.confidence)) }
                                    td {
                                        // The epoch: a fact whose start no line dates.
                                        @if n.edge.valid_from.0 > 0 { (when(n.edge.valid_from, now)) } @else { "always" }
                                        @if let Some(to) = n.edge.valid_to { " – " (when(to, now)) }
                                    }
                                    td { (evidence(shown, &n.edge)) }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}
