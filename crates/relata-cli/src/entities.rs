//! `relata entities`: canonical entities, the mentions resolved to them and why, the
//! re-resolution backfill, and a person's undo of a join. The model's proposals are in
//! `propose.rs`.

use anyhow::{Context, Result};
use relata_store::entities::{CanonicalEntity, Resolution, UndecidedSide};

use crate::config::Config;
use crate::out::outln;
use crate::pipeline::store;

#[derive(Debug, clap::Subcommand)]
pub enum EntitiesCommand {
    /// Canonical entities, most mentioned first, each with the names it is written as and,
    /// for every mention, the rule that joined it and the text that gives the join.
    List {
        /// Only entities with a mention whose name contains this (any case).
        #[arg(long)]
        name: Option<String>,
        /// Only entities written under more than one name.
        #[arg(long)]
        joined: bool,
        /// At most this many.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        limit: u32,
        /// Print JSON: an array of entities with their mentions.
        #[arg(long)]
        json: bool,
    },
    /// What waits for a person: pairs of entities whose names suggest one thing and that
    /// no rule may join (one name and type that the documents describe as two things, one
    /// name under two types, a singular and a plural, a person's name and a fuller form of
    /// it, a surname against a full name elsewhere, a name that begins or ends a longer one
    /// of its document), most mentioned first, each side with the
    /// sentence that writes it. Decide each with `join` or `separate`; a decided pair is
    /// not listed again.
    Undecided {
        /// At most this many pairs.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        limit: u32,
        /// Print JSON: an array of pairs.
        #[arg(long)]
        json: bool,
    },
    /// Ask the model about the pairs `undecided` lists, most mentioned first: are the two
    /// one thing? The gate judges each answer (a verdict, and as evidence a sentence it
    /// was shown with words copied from it); a `one` is a proposal that the policy holds
    /// for a named person (`relata review`), and an approved one joins at the next
    /// `relata entities resolve`. The model joins nothing itself. A pair already asked
    /// with the same model and prompt is not asked again.
    Propose {
        /// At most this many pairs.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        limit: u32,
        /// Print JSON: the summary and one object per pair asked.
        #[arg(long)]
        json: bool,
    },
    /// Re-resolve every stored mention under the current rules and the recorded
    /// separations; writes only what changed (running it twice changes nothing). The
    /// backfill after a rule change or a separation.
    Resolve {
        #[arg(long)]
        json: bool,
    },
    /// Join what no rule joins (two types, a nickname, a name the text never links):
    /// record, in a reviewer's name, that two mentions are one thing, then re-resolve.
    /// Undone by `separate` (the later decision holds).
    Join {
        /// The mention (an entity row id, as `relata entities list` shows it).
        entity: i64,
        /// The mention it is the same thing as.
        #[arg(long)]
        to: i64,
        /// The reviewer: a name from `[review] reviewers` / RELATA_REVIEWERS.
        #[arg(long)]
        by: String,
        /// Why they are one thing (the evidence a reader can check).
        #[arg(long)]
        note: String,
    },
    /// Undo a join: record, in a reviewer's name, that two mentions are not one thing,
    /// then re-resolve. Claims of the mention follow it; no row is removed.
    Separate {
        /// The mention (an entity row id, as `relata entities list` shows it).
        entity: i64,
        /// The mention it must not be joined with.
        #[arg(long)]
        from: i64,
        /// The reviewer: a name from `[review] reviewers` / RELATA_REVIEWERS.
        #[arg(long)]
        by: String,
        /// Why they are different things.
        #[arg(long)]
        note: String,
    },
}

pub async fn run(config: &Config, cmd: EntitiesCommand) -> Result<u8> {
    match cmd {
        EntitiesCommand::List {
            name,
            joined,
            limit,
            json,
        } => list(config, name.as_deref(), joined, limit, json).await,
        EntitiesCommand::Undecided { limit, json } => undecided(config, limit, json).await,
        EntitiesCommand::Propose { limit, json } => {
            crate::propose::propose(config, limit, json).await
        }
        EntitiesCommand::Resolve { json } => resolve(config, json).await,
        EntitiesCommand::Join {
            entity,
            to,
            by,
            note,
        } => {
            let reviewer = reviewer(config, &by, &note, "join")?;
            let store = store(config).await?;
            store
                .join_entities(entity, to, &reviewer, &note)
                .await
                .context("recording the join")?;
            eprintln!("entity {entity} is joined to entity {to}; re-resolving");
            resolve(config, false).await
        }
        EntitiesCommand::Separate {
            entity,
            from,
            by,
            note,
        } => {
            let reviewer = reviewer(config, &by, &note, "separation")?;
            let store = store(config).await?;
            store
                .separate_entities(entity, from, &reviewer, &note)
                .await
                .context("recording the separation")?;
            eprintln!("entity {entity} is kept apart from entity {from}; re-resolving");
            resolve(config, false).await
        }
    }
}

/// The reviewer `by` names, from the configured list, for a decision that says why.
fn reviewer(config: &Config, by: &str, note: &str, what: &str) -> Result<String> {
    let reviewer = config
        .reviewers()?
        .get(by)
        .map_err(|e| anyhow::anyhow!("--by: {e}"))?;
    if note.trim().is_empty() {
        anyhow::bail!("--note: a {what} must say why");
    }
    Ok(reviewer.name().to_owned())
}

async fn undecided(config: &Config, limit: u32, json: bool) -> Result<u8> {
    let store = store(config).await?;
    let pairs = store
        .undecided_pairs(limit as usize)
        .await
        .context("reading the undecided pairs")?;
    if json {
        outln!("{}", serde_json::to_string(&pairs)?)?;
        return Ok(0);
    }
    if pairs.is_empty() {
        outln!("nothing waits for a person: no names suggest a join that no rule made")?;
    }
    for p in &pairs {
        let count = |n: i64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let side = |s: &UndecidedSide| {
            format!(
                "entity {} {:?} ({}; {}, {})",
                s.entity_id,
                s.name,
                s.entity_type,
                count(s.mentions, "mention"),
                count(s.claims, "claim")
            )
        };
        outln!("{}: {} / {}", p.why.as_str(), side(&p.a), side(&p.b))?;
        for s in [&p.a, &p.b] {
            outln!(
                "  {:>6} document {}: {}",
                s.mention_id,
                s.document_id,
                s.sentence.as_deref().map_or_else(
                    || "(no sentence writes it)".to_owned(),
                    |t| format!("{t:?}")
                )
            )?;
            let d = &s.described;
            let said: Vec<String> = [
                d.title.as_ref().map(|t| format!("titled {t:?}")),
                d.longer.as_ref().map(|l| format!("short for {l:?}")),
                d.kind.as_ref().map(|k| format!("called a {k}")),
                d.year.as_ref().map(|y| format!("dated {y}")),
                d.maker.as_ref().map(|m| format!("made by {m:?}")),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !said.is_empty() {
                outln!("         its document: {}", said.join(", "))?;
            } else if p.why.as_str() == "described_apart" {
                outln!("         its document: says not which thing of the name it is")?;
            }
        }
        outln!(
            "  one thing: relata entities join {} --to {} --by NAME --note WHY; two: relata entities separate {} --from {} --by NAME --note WHY",
            p.b.mention_id,
            p.a.mention_id,
            p.b.mention_id,
            p.a.mention_id
        )?;
    }
    Ok(0)
}

async fn resolve(config: &Config, json: bool) -> Result<u8> {
    let store = store(config).await?;
    let s = store
        .resolve_entities()
        .await
        .context("resolving entities")?;
    if json {
        outln!("{}", serde_json::to_string(&s)?)?;
        return Ok(0);
    }
    outln!(
        "{} mentions, {} canonical entities, {} rows changed",
        s.mentions,
        s.canonical_entities,
        s.changed
    )?;
    for (rule, n) in &s.by_rule {
        outln!("  {rule:<14} {n}")?;
    }
    if s.kept_apart > 0 {
        outln!(
            "  {} joins kept apart by a person's separation",
            s.kept_apart
        )?;
    }
    if s.described_apart > 0 {
        outln!(
            "  {} same-name joins not made: the documents describe another thing, or say not which of two (relata entities undecided)",
            s.described_apart
        )?;
    }
    Ok(0)
}

async fn list(
    config: &Config,
    name: Option<&str>,
    joined: bool,
    limit: u32,
    json: bool,
) -> Result<u8> {
    let store = store(config).await?;
    let entities: Vec<CanonicalEntity> = store
        .canonical_entities(name)
        .await
        .context("reading entities")?
        .into_iter()
        .filter(|e| !joined || e.names.len() > 1)
        .take(limit as usize)
        .collect();
    if json {
        outln!("{}", serde_json::to_string(&entities)?)?;
        return Ok(0);
    }
    if entities.is_empty() {
        if name.is_some() || joined {
            outln!("no resolved entity matches")?;
        } else {
            outln!("no resolved entities (run `relata entities resolve`)")?;
        }
    }
    for e in &entities {
        outln!(
            "entity {} {:?} ({}): {} mentions in {} documents, {} claims",
            e.id,
            e.name,
            e.entity_type,
            e.mentions.len(),
            e.documents,
            e.claims
        )?;
        for m in &e.mentions {
            let why = match (m.rule, &m.evidence, m.joined_to) {
                (Resolution::First, _, _) => "first mention".to_owned(),
                (Resolution::Person, _, to) => match &m.decided_by {
                    Some(d) => format!(
                        "joined with {} by {}: {:?}",
                        to.map_or_else(String::new, |t| t.to_string()),
                        d.reviewer,
                        d.reason
                    ),
                    None => "joined by a person".to_owned(),
                },
                (rule, Some(ev), Some(to)) => {
                    format!("{} with {to}: {:?}", rule.as_str(), ev.quote)
                }
                (rule, _, Some(to)) => format!("{} with {to}", rule.as_str()),
                (rule, _, None) => rule.as_str().to_owned(),
            };
            outln!(
                "  {:>6} {:?} document {} · {} claims · {why}",
                m.entity_id,
                m.name,
                m.document_id,
                m.claims
            )?;
        }
    }
    Ok(0)
}
