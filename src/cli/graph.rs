//! `eywa graph`: entities, neighbours, what touched a node, walks, paths, related sessions.

use std::process::ExitCode;

use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use eywa::engine::parse_relations;
use eywa::engine::{AsOf, Direction, EdgeFilter};
use eywa::model::Timestamp;
use serde_json::{Value, json};

use crate::app::Paths;
use crate::app::client::Client;
use crate::app::render::{edge_json, edge_line, node_json, node_line};

#[derive(Debug, ClapArgs)]
pub(super) struct Args {
    #[command(subcommand)]
    command: Command,
    /// Print JSON
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One node (id, session:<id>, project:<name>, tool:<name>, …) and its handoff
    Node { node: String },
    /// Entities by name, alias or path
    Find {
        name: String,
        /// Project, File, Tool, Concept, …
        #[arg(long = "type")]
        entity_type: Option<String>,
        /// Names that start with NAME
        #[arg(long)]
        prefix: bool,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Edges at a node and the nodes at their other ends
    Neighbors {
        node: String,
        #[command(flatten)]
        filter: FilterArgs,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Breadth-first walk from a node
    Walk {
        node: String,
        #[arg(long, default_value_t = 2)]
        depth: u32,
        #[arg(long, default_value_t = 100)]
        max_nodes: usize,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Shortest path between two nodes
    Path {
        from: String,
        to: String,
        #[arg(long, default_value_t = 4)]
        max_depth: u32,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Sessions sharing projects, files, tools and concepts with a session
    Related {
        session: String,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Sessions that touched an entity, newest first
    Touched {
        entity: String,
        #[command(flatten)]
        filter: FilterArgs,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Only sessions by this user (repeatable; any case)
        #[arg(long = "user", value_name = "USER", value_parser = crate::app::user_name)]
        users: Vec<String>,
        /// Only sessions written on this machine (repeatable; any case)
        #[arg(long = "machine", value_name = "MACHINE", value_parser = crate::app::machine_name)]
        machines: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DirectionArg {
    Both,
    Out,
    In,
}

#[derive(Debug, ClapArgs)]
struct FilterArgs {
    /// Only edges of this relation (repeatable): TOUCHED, USED, …
    #[arg(long = "relation")]
    relations: Vec<String>,
    #[arg(long, value_enum, default_value = "both")]
    direction: DirectionArg,
    /// Only facts that held at or after this time (RFC 3339 or YYYY-MM-DD)
    #[arg(long, value_parser = parse_time)]
    since: Option<Timestamp>,
    /// Only facts that held at or before this time
    #[arg(long, value_parser = parse_time)]
    until: Option<Timestamp>,
    /// What held in the world at this time
    #[arg(long, value_parser = parse_time)]
    as_of_valid: Option<Timestamp>,
    /// What eywa knew at this time
    #[arg(long, value_parser = parse_time)]
    as_of_recorded: Option<Timestamp>,
}

fn parse_time(s: &str) -> Result<Timestamp, String> {
    Timestamp::parse(s)
        .ok_or_else(|| format!("`{s}` is not RFC 3339 (2026-01-05T10:00:00Z) or a date"))
}

impl FilterArgs {
    fn filter(&self) -> anyhow::Result<EdgeFilter> {
        Ok(EdgeFilter {
            direction: match self.direction {
                DirectionArg::Both => Direction::Both,
                DirectionArg::Out => Direction::Out,
                DirectionArg::In => Direction::In,
            },
            relations: parse_relations(&self.relations)?,
            from: self.since,
            until: self.until,
            as_of: AsOf {
                valid: self.as_of_valid,
                recorded: self.as_of_recorded,
            },
        })
    }
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let client = Client::connect(paths)?;
    let (json, lines) = answer(&client, args.command)?;
    if args.json {
        crate::app::print_json(&json)?;
    } else {
        for line in lines {
            outln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn answer(client: &Client, command: Command) -> anyhow::Result<(Value, Vec<String>)> {
    Ok(match command {
        Command::Node { node } => {
            let (node, handoff) = client.node(&node)?;
            let handoff = handoff
                .map(|h| crate::agents::mcp::full_handoff(client, &h))
                .transpose()?;
            let mut lines = vec![node_line(&node)];
            let body = handoff.as_ref().map(eywa::present::handoff::body);
            if let (Some(h), Some(body)) = (&handoff, &body) {
                lines.push(format!("   {}", eywa::present::handoff::facts(h)));
                lines.push(String::new());
                lines.extend(body.lines().map(str::to_owned));
            }
            let handoff = handoff.map(|h| {
                json!({"headline": h.headline, "projects": h.projects, "keywords": h.keywords,
                       "substance": h.substance, "date": h.date.to_string(),
                       "duration": h.duration_label(), "body": body})
            });
            (json!({"node": node_json(&node), "handoff": handoff}), lines)
        }
        Command::Find {
            name,
            entity_type,
            prefix,
            limit,
        } => {
            let nodes = client.find_entities(&name, entity_type.as_deref(), prefix, limit)?;
            let lines = nodes.iter().map(node_line).collect();
            (
                json!({"entities": nodes.iter().map(node_json).collect::<Vec<_>>()}),
                lines,
            )
        }
        Command::Neighbors {
            node,
            filter,
            limit,
        } => {
            let (node, neighbors) = client.neighbors(&node, &filter.filter()?, limit)?;
            let mut lines = vec![node_line(&node)];
            lines.extend(neighbors.iter().map(|n| {
                let arrow = if n.edge.src == node.id { "→" } else { "←" };
                format!("  {arrow} {}  {}", edge_line(&n.edge), node_line(&n.node))
            }));
            let list: Vec<Value> = neighbors
                .iter()
                .map(|n| json!({"edge": edge_json(&n.edge), "node": node_json(&n.node)}))
                .collect();
            (json!({"node": node_json(&node), "neighbors": list}), lines)
        }
        Command::Walk {
            node,
            depth,
            max_nodes,
            filter,
        } => {
            let walk = client.walk(&node, depth, max_nodes, &filter.filter()?)?;
            let mut lines: Vec<String> = walk
                .steps
                .iter()
                .map(|s| format!("{}{}", "  ".repeat(s.depth as usize), node_line(&s.node)))
                .collect();
            if walk.truncated {
                lines.push(format!("(stopped at {max_nodes} nodes)"));
            }
            let steps: Vec<Value> = walk
                .steps
                .iter()
                .map(|s| {
                    json!({"depth": s.depth, "node": node_json(&s.node),
                           "via": s.via.as_ref().map(|(e, _)| edge_json(e)),
                           "from": s.via.as_ref().map(|(_, f)| f.to_string())})
                })
                .collect();
            (json!({"steps": steps, "truncated": walk.truncated}), lines)
        }
        Command::Path {
            from,
            to,
            max_depth,
            filter,
        } => match client.path(&from, &to, max_depth, &filter.filter()?)? {
            None => (
                json!({"found": false, "steps": []}),
                vec![format!("no path within {max_depth} hops")],
            ),
            Some(steps) => {
                let lines = steps
                    .iter()
                    .map(|s| match &s.via {
                        Some(e) => format!("  via {}  {}", edge_line(e), node_line(&s.node)),
                        None => node_line(&s.node),
                    })
                    .collect();
                let list: Vec<Value> = steps
                        .iter()
                        .map(|s| json!({"node": node_json(&s.node), "via": s.via.as_ref().map(edge_json)}))
                        .collect();
                (json!({"found": true, "steps": list}), lines)
            }
        },
        Command::Related { session, limit } => {
            let reference = if session.contains(':') || session.len() == 36 {
                session
            } else {
                format!("session:{session}")
            };
            let related = client.related(&reference, limit)?;
            let lines = related
                .iter()
                .map(|r| {
                    let shared: Vec<String> =
                        r.shared.iter().map(|s| s.entity.name.clone()).collect();
                    let similar = if r.similarity > 0.0 {
                        format!("  similarity {:.2}", r.similarity)
                    } else {
                        String::new()
                    };
                    format!(
                        "{:.3}  {}  shares {}{similar}",
                        r.score,
                        node_line(&r.episode),
                        if shared.is_empty() {
                            "nothing".to_owned()
                        } else {
                            shared.join(", ")
                        }
                    )
                })
                .collect();
            let list: Vec<Value> = related
                .iter()
                .map(|r| {
                    json!({"score": r.score, "similarity": r.similarity, "episode": node_json(&r.episode),
                           "shared": r.shared.iter().map(|s| json!({"entity": node_json(&s.entity), "weight": s.weight})).collect::<Vec<_>>()})
                })
                .collect();
            (json!({"related": list}), lines)
        }
        Command::Touched {
            entity,
            filter,
            limit,
            users,
            machines,
        } => {
            let authors = eywa::model::Attribution { users, machines };
            let touches = client.what_touched(&entity, &filter.filter()?, &authors, limit)?;
            let lines = touches.iter().map(|t| node_line(&t.episode)).collect();
            let list: Vec<Value> = touches
                .iter()
                .map(|t| json!({"episode": node_json(&t.episode), "edge": edge_json(&t.edge)}))
                .collect();
            (json!({"touches": list}), lines)
        }
    })
}
