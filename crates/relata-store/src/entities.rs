//! Canonical entities: the store's mentions (rows of `entities`) resolved by the
//! deterministic rules of [`relata_validate::resolve`] into clusters, each named by the
//! id of its first mention, with the rule, the mention joined through and the text's own
//! bytes where the text gives the join. Nothing here asks a model.
//!
//! People decide what the rules cannot: [`Store::join_entities`] records that two
//! mentions are one thing (across types, a nickname), [`Store::separate_entities`] that
//! they are not (a homonym a rule joined); for one pair, the later decision holds, and a
//! separation wins over the joins that would still put the pair in one cluster.
//!
//! [`Store::resolve_entities`] recomputes the whole mapping from the mentions, the
//! revisions' text and the decisions people recorded, and writes only the rows that
//! changed, so running it again changes nothing and a rule change is a backfill.
//! [`Store::resolve_new_entities`] is the cheap step beside the commits (a worker's
//! promoter takes it): it resolves the mentions that have no row yet against the store,
//! attaching each to an existing entity or founding one, without re-deciding the rest (a
//! mention that would bridge two existing entities joins the older one; the next full
//! resolve merges them).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use relata_core::{EntityType, closed_enum};
use relata_validate::resolve::{
    Described, Join, JoinRule, Mention, Resolved, Undecided, clusters, kind_name_head,
    kind_name_keys, name_key, resolve, undecided,
};
use sqlx::Row;

use crate::error::{Result, StoreError};
use crate::lock::lock_key;
use crate::{Store, parse_label};

/// Bumped when a rule changes what it joins; stored with each row, so a store resolved by
/// older rules can be told apart (and is re-resolved by `relata entities resolve`).
pub const RULES_VERSION: i32 = 5;

/// Held exclusively by a full resolve, shared by the step beside each commit.
const RESOLUTION_LOCK: &str = "entity-resolution";

closed_enum! {
    /// Why a mention belongs to its canonical entity: the entity's first mention (its id
    /// names the entity) or the rule of `relata_validate::resolve` that joined it.
    pub enum Resolution: "resolution rule" {
        First = "first",
        SameName = "same_name",
        AliasInText = "alias_in_text",
        ShortName = "short_name",
        KindName = "kind_name",
        /// A named person joined it (`entity_joins`).
        Person = "person",
    }
}

impl Resolution {
    fn of(rule: JoinRule) -> Resolution {
        match rule {
            JoinRule::SameName => Resolution::SameName,
            JoinRule::AliasInText => Resolution::AliasInText,
            JoinRule::ShortName => Resolution::ShortName,
            JoinRule::KindName => Resolution::KindName,
            JoinRule::Person => Resolution::Person,
        }
    }
}

/// What a resolve did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResolveSummary {
    pub mentions: u64,
    pub canonical_entities: u64,
    /// Mentions by the rule that placed them (`first` for each entity's first mention).
    pub by_rule: BTreeMap<&'static str, u64>,
    /// Rows written because they were new or differed; 0 when nothing changed.
    pub changed: u64,
    /// Joins a recorded separation kept from being made.
    pub kept_apart: u64,
    /// Mentions `same_name` kept from the first entity of their name because their
    /// documents describe another thing (`relata_validate::resolve::Described`).
    pub described_apart: u64,
}

/// One resolved mention, as [`Store::canonical_entities`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResolvedMention {
    pub entity_id: i64,
    pub name: String,
    pub document_id: i64,
    pub revision_id: i64,
    pub rule: Resolution,
    pub joined_to: Option<i64>,
    /// The revision's own bytes that give the join, with their UTF-8 byte offsets.
    pub evidence: Option<Evidence>,
    /// Who joined it and why, when a person did (`rule` is `person`).
    pub decided_by: Option<PersonDecision>,
    pub claims: i64,
}

/// A person's recorded join.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PersonDecision {
    pub reviewer: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Evidence {
    pub revision_id: i64,
    pub start: i32,
    pub end: i32,
    pub quote: String,
}

impl Evidence {
    /// The evidence in `row`'s columns `[revision, start, end, quote]`; `None` when the
    /// join was not given by the text (the columns are all NULL together).
    pub(crate) fn read<I>(
        row: &sqlx::postgres::PgRow,
        [revision, start, end, quote]: [I; 4],
    ) -> Result<Option<Evidence>>
    where
        I: sqlx::ColumnIndex<sqlx::postgres::PgRow>,
    {
        let Some(revision_id) = row.try_get::<Option<i64>, _>(revision)? else {
            return Ok(None);
        };
        Ok(Some(Evidence {
            revision_id,
            start: row.try_get(start)?,
            end: row.try_get(end)?,
            quote: row.try_get(quote)?,
        }))
    }
}

/// The columns of `entity_resolutions` (under the alias given) that hold what a mention's
/// document describes it as, in the order [`read_described`] reads them.
macro_rules! described_columns {
    ($alias:literal) => {
        concat!(
            $alias,
            ".described_title, ",
            $alias,
            ".described_longer, ",
            $alias,
            ".described_kind, ",
            $alias,
            ".described_year, ",
            $alias,
            ".described_maker"
        )
    };
}
pub(crate) use described_columns;

/// What a mention's document describes it as, from `row`'s [`described_columns`] starting
/// at column `first`.
pub(crate) fn read_described(row: &sqlx::postgres::PgRow, first: usize) -> Result<Described> {
    Ok(Described {
        title: row.try_get(first)?,
        longer: row.try_get(first + 1)?,
        kind: row.try_get(first + 2)?,
        year: row.try_get(first + 3)?,
        maker: row.try_get(first + 4)?,
    })
}

/// A canonical entity with every mention resolved to it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CanonicalEntity {
    pub id: i64,
    /// Its first mention's name.
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    /// The distinct names it is written as, in order of first mention.
    pub names: Vec<String>,
    pub documents: i64,
    pub claims: i64,
    pub mentions: Vec<ResolvedMention>,
}

/// Two entities the rules keep apart though their names suggest one thing: what waits
/// for a person ([`Store::undecided_pairs`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UndecidedPair {
    pub why: Undecided,
    pub a: UndecidedSide,
    pub b: UndecidedSide,
}

/// One side of an [`UndecidedPair`]: the entity, and the mention of it that the pair is
/// about, with the sentence its chunk writes it in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UndecidedSide {
    /// The canonical entity (its first mention's id).
    pub entity_id: i64,
    /// The mention the names pair (an entity row id, as `relata entities join` takes it).
    pub mention_id: i64,
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    pub document_id: i64,
    /// The first sentence of the mention's chunk that writes its name on its own (not
    /// inside a longer name of the chunk), else the first that writes it, if one does.
    pub sentence: Option<String>,
    /// What the mention's document describes the name as, where it says (two sides
    /// of one name and type are apart because these differ).
    pub described: Described,
    pub mentions: i64,
    pub claims: i64,
}

/// A mention as loaded for resolution.
struct Loaded {
    id: i64,
    revision_id: i64,
    document: String,
    title: Option<String>,
    name: String,
    start: usize,
    entity_type: EntityType,
}

/// A mention's placement, as it is written to `entity_resolutions`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Placement {
    canonical_id: i64,
    rule: Resolution,
    joined_to: Option<i64>,
    evidence: Option<Evidence>,
    name_key: String,
    described: Described,
}

/// What [`loaded`] reads of a mention: its row and its chunk (to place it in the text).
macro_rules! load_mentions {
    () => {
        "SELECT e.id, e.revision_id, e.name, e.entity_type, ch.start_byte, ch.text, d.title
         FROM entities e JOIN chunks ch ON ch.id = e.chunk_id
         JOIN documents d ON d.id = e.document_id "
    };
}

impl Store {
    /// Recompute every mention's canonical entity (see the module). One resolve at a time:
    /// a second waits for the first.
    pub async fn resolve_entities(&self) -> Result<ResolveSummary> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(lock_key(RESOLUTION_LOCK))
            .execute(&mut *tx)
            .await?;
        let rows = sqlx::query(concat!(load_mentions!(), "ORDER BY e.id"))
            .fetch_all(&mut *tx)
            .await?;
        let mentions = loaded(&rows)?;
        let texts = revision_texts(&mut tx, &mentions).await?;
        let decided = decisions(&mut tx).await?;
        let as_mentions: Vec<Mention> = mentions.iter().map(Loaded::mention).collect();
        let resolution = resolve(
            &as_mentions,
            |doc| texts.get(doc).map(String::as_str),
            &HashMap::new(),
        );
        let mut found = resolution.joins;
        found.extend(person_joins(&mentions, &decided.together));
        let (kept, kept_apart) = respect_separations(&mentions, found, &decided.apart);
        let mut placements = place(&mentions, &kept, &texts);
        for (p, d) in placements.iter_mut().zip(resolution.described) {
            p.described = d;
        }
        let changed = write(&mut tx, mentions.iter().zip(&placements)).await?;
        tx.commit().await?;
        let mut summary = summarize(&placements);
        summary.changed = changed;
        summary.kept_apart = kept_apart;
        summary.described_apart = resolution.kept_apart.len() as u64;
        Ok(summary)
    }

    /// Resolve the mentions `entity_ids` (those commits just stored), and any mention of
    /// their revisions still without a resolution, against the store (see the module):
    /// the step a worker's promoter takes beside the commits. Returns how many rows it
    /// wrote.
    pub async fn resolve_new_entities(&self, entity_ids: &[i64]) -> Result<u64> {
        if entity_ids.is_empty() {
            return Ok(0);
        }
        let mut tx = self.pool.begin().await?;
        // Beside other workers' commits: a full resolve excludes this, and two commits
        // wait for each other only where they share a revision or a name.
        sqlx::query("SELECT pg_advisory_xact_lock_shared($1)")
            .bind(lock_key(RESOLUTION_LOCK))
            .execute(&mut *tx)
            .await?;
        let rows = sqlx::query(concat!(
            load_mentions!(),
            "WHERE e.id = ANY($1)
               AND NOT EXISTS (SELECT 1 FROM entity_resolutions r WHERE r.entity_id = e.id)
             ORDER BY e.id"
        ))
        .bind(entity_ids)
        .fetch_all(&mut *tx)
        .await?;
        let fresh = loaded(&rows)?;
        if fresh.is_empty() {
            return Ok(0);
        }
        let revisions: Vec<i64> = fresh.iter().map(|m| m.revision_id).collect();
        let (locks, keys) = neighbourhood(&fresh);
        for lock in locks {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(lock)
                .execute(&mut *tx)
                .await?;
        }
        // The neighbourhood a new mention can join: its revision's mentions (the in-text
        // rules) and, for its name and each type, the first resolved mention of each
        // entity of that name — the ones `same_name` joins a later mention to — and every
        // mention of the name whose document said what it stands for: with their own
        // descriptions they rebuild the groups `same_name` keeps apart, and their
        // documents are what a mention whose document says nothing is compared with.
        let types: Vec<&str> = EntityType::ALL.iter().map(|t| t.as_str()).collect();
        let rows = sqlx::query(concat!(
            load_mentions!(),
            "WHERE e.revision_id = ANY($1) OR e.id IN
               (SELECT f.entity_id
                  FROM unnest($2::text[]) AS k(key)
                  CROSS JOIN unnest($3::text[]) AS t(entity_type)
                  CROSS JOIN LATERAL (
                      SELECT DISTINCT ON (r.canonical_id) r.entity_id
                        FROM entity_resolutions r
                       WHERE r.name_key = k.key AND r.entity_type = t.entity_type
                       ORDER BY r.canonical_id, r.entity_id) f)
               OR e.id IN
               (SELECT r.entity_id FROM entity_resolutions r
                 WHERE r.name_key = ANY($2) AND num_nonnulls(",
            described_columns!("r"),
            ") > 0)
             ORDER BY e.id"
        ))
        .bind(&revisions)
        .bind(&keys)
        .bind(&types)
        .fetch_all(&mut *tx)
        .await?;
        let near = loaded(&rows)?;
        let known = known_placements(&mut tx, &near).await?;
        // The new mentions' revisions give the in-text joins and their descriptions; an
        // existing mention keeps what its document was read as. Every document of the
        // neighbourhood is read, to compare a mention that says nothing with: an
        // existing one that says nothing was placed by the names its document shares.
        let as_described: HashMap<usize, Described> = near
            .iter()
            .enumerate()
            .filter_map(|(i, m)| Some((i, known.get(&m.id)?.1.clone())))
            .collect();
        let texts = revision_texts(&mut tx, &near).await?;
        let decided = decisions(&mut tx).await?;
        let as_mentions: Vec<Mention> = near.iter().map(Loaded::mention).collect();
        let resolution = resolve(
            &as_mentions,
            |doc| texts.get(doc).map(String::as_str),
            &as_described,
        );
        let mut found = resolution.joins;
        found.extend(person_joins(&near, &decided.together));
        let (kept, _) = respect_separations(&near, found, &decided.apart);
        let canonical: HashMap<i64, i64> = known.iter().map(|(&id, k)| (id, k.0)).collect();
        let mut placements = attach(&near, &kept, &texts, &canonical);
        for (p, d) in placements.iter_mut().zip(resolution.described) {
            if let Some(p) = p {
                p.described = d;
            }
        }
        let changed = write(
            &mut tx,
            near.iter()
                .zip(&placements)
                .filter_map(|(m, p)| Some((m, p.as_ref()?))),
        )
        .await?;
        tx.commit().await?;
        Ok(changed)
    }

    /// Record that two mentions are not one thing (a person's undo of a join). Takes
    /// effect at the next [`Store::resolve_entities`].
    pub async fn separate_entities(
        &self,
        entity_id: i64,
        apart_from: i64,
        reviewer: &str,
        reason: &str,
    ) -> Result<()> {
        self.decide(Decided::Apart, entity_id, apart_from, reviewer, reason)
            .await
    }

    /// Record that two mentions are one thing though no rule joins them (another type, a
    /// nickname): a person's join. Takes effect at the next [`Store::resolve_entities`];
    /// for one pair of mentions, the later of a join and a separation holds.
    pub async fn join_entities(
        &self,
        entity_id: i64,
        joined_to: i64,
        reviewer: &str,
        reason: &str,
    ) -> Result<()> {
        self.decide(Decided::Together, entity_id, joined_to, reviewer, reason)
            .await
    }

    async fn decide(
        &self,
        decided: Decided,
        entity_id: i64,
        other: i64,
        reviewer: &str,
        reason: &str,
    ) -> Result<()> {
        let what = match decided {
            Decided::Apart => "separation",
            Decided::Together => "join",
        };
        if entity_id == other {
            return Err(StoreError::InvalidInput(format!(
                "a {what} needs two entities, and {entity_id} is given twice"
            )));
        }
        for (field, text) in [("reviewer", reviewer), ("reason", reason)] {
            if text.trim().is_empty() {
                return Err(StoreError::InvalidInput(format!(
                    "a {what} needs a {field}"
                )));
            }
        }
        let known: Vec<i64> = sqlx::query_scalar("SELECT id FROM entities WHERE id = ANY($1)")
            .bind([entity_id, other])
            .fetch_all(&self.pool)
            .await?;
        for id in [entity_id, other] {
            if !known.contains(&id) {
                return Err(StoreError::InvalidInput(format!("no entity {id}")));
            }
        }
        let sql = match decided {
            Decided::Apart => {
                "INSERT INTO entity_separations (entity_id, apart_from, reviewer, reason)
                 VALUES ($1, $2, $3, $4)"
            }
            Decided::Together => {
                "INSERT INTO entity_joins (entity_id, joined_to, reviewer, reason)
                 VALUES ($1, $2, $3, $4)"
            }
        };
        sqlx::query(sql)
            .bind(entity_id)
            .bind(other)
            .bind(reviewer.trim())
            .bind(reason.trim())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Canonical entities with their mentions, largest first; `name` keeps those with a
    /// mention whose name contains it (case-insensitive).
    pub async fn canonical_entities(&self, name: Option<&str>) -> Result<Vec<CanonicalEntity>> {
        let rows = sqlx::query(
            "SELECT r.canonical_id, e.id, e.name, e.entity_type, e.document_id, e.revision_id,
                    r.rule, r.joined_to, r.evidence_revision_id, r.evidence_start,
                    r.evidence_end, r.evidence_quote, pj.reviewer, pj.reason,
                    (SELECT count(*) FROM claims c WHERE c.entity_id = e.id)
             FROM entity_resolutions r JOIN entities e ON e.id = r.entity_id
             LEFT JOIN LATERAL (
                 SELECT j.reviewer, j.reason FROM (
                     SELECT reviewer, reason, decided_at, id, entity_id, joined_to
                       FROM entity_joins
                     UNION ALL
                     SELECT actor, 'approved a model''s proposal; its evidence: '
                                   || evidence_quote || coalesce('; ' || note, ''),
                            decided_at, id, entity_id, joined_to
                       FROM promoted_join_proposals) j
                  WHERE r.rule = 'person'
                    AND ((j.entity_id = e.id AND j.joined_to = r.joined_to)
                         OR (j.entity_id = r.joined_to AND j.joined_to = e.id))
                  ORDER BY j.decided_at DESC, j.id DESC LIMIT 1) pj ON true
             WHERE $1::text IS NULL OR r.canonical_id IN
                 (SELECT r2.canonical_id FROM entity_resolutions r2
                  JOIN entities e2 ON e2.id = r2.entity_id
                  WHERE strpos(lower(e2.name), lower($1)) > 0)
             ORDER BY r.canonical_id, e.id",
        )
        .bind(name)
        .fetch_all(&self.pool)
        .await?;
        let mut out: Vec<CanonicalEntity> = Vec::new();
        for row in &rows {
            let canonical: i64 = row.try_get("canonical_id")?;
            let mention = ResolvedMention {
                entity_id: row.try_get("id")?,
                name: row.try_get("name")?,
                document_id: row.try_get("document_id")?,
                revision_id: row.try_get("revision_id")?,
                rule: parse_label(row.try_get("rule")?)?,
                joined_to: row.try_get("joined_to")?,
                evidence: Evidence::read(
                    row,
                    [
                        "evidence_revision_id",
                        "evidence_start",
                        "evidence_end",
                        "evidence_quote",
                    ],
                )?,
                decided_by: match row.try_get::<Option<String>, _>("reviewer")? {
                    Some(reviewer) => Some(PersonDecision {
                        reviewer,
                        reason: row.try_get("reason")?,
                    }),
                    None => None,
                },
                claims: row.try_get("count")?,
            };
            if out.last().is_none_or(|c| c.id != canonical) {
                out.push(CanonicalEntity {
                    id: canonical,
                    name: mention.name.clone(),
                    entity_type: row.try_get("entity_type")?,
                    names: Vec::new(),
                    documents: 0,
                    claims: 0,
                    mentions: Vec::new(),
                });
            }
            let entity = out.last_mut().expect("pushed above");
            if !entity.names.contains(&mention.name) {
                entity.names.push(mention.name.clone());
            }
            entity.claims += mention.claims;
            entity.mentions.push(mention);
        }
        for e in &mut out {
            let docs: HashSet<i64> = e.mentions.iter().map(|m| m.document_id).collect();
            e.documents = docs.len() as i64;
        }
        out.sort_by(|a, b| {
            b.mentions
                .len()
                .cmp(&a.mentions.len())
                .then(a.id.cmp(&b.id))
        });
        Ok(out)
    }
}

impl Store {
    /// Pairs of canonical entities whose names suggest one thing and that no rule joined
    /// ([`relata_validate::resolve::undecided`]): one name and type whose documents
    /// describe two things, a name under two types, a singular and a
    /// plural, a person's name and a fuller form of it, a surname in one document and a
    /// full name in another, a name that begins or ends a longer one of its document. A
    /// pair a person kept apart (a separation between any of their mentions that still
    /// holds) is decided and not listed. The pairs with the most mentions come first; at
    /// most `limit`.
    pub async fn undecided_pairs(&self, limit: usize) -> Result<Vec<UndecidedPair>> {
        let rows: Vec<MentionRow> = sqlx::query(concat!(
            "SELECT r.canonical_id, e.id, e.name, r.entity_type, e.document_id, e.chunk_id, ",
            described_columns!("r"),
            " FROM entity_resolutions r JOIN entities e ON e.id = r.entity_id
              ORDER BY r.canonical_id, e.id"
        ))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(MentionRow {
                entity: r.try_get(0)?,
                mention: r.try_get(1)?,
                name: r.try_get(2)?,
                entity_type: r.try_get(3)?,
                document_id: r.try_get(4)?,
                chunk_id: r.try_get(5)?,
                described: read_described(r, 6)?,
            })
        })
        .collect::<Result<_>>()?;
        let types: Vec<EntityType> = rows
            .iter()
            .map(|r| parse_label(r.entity_type.clone()))
            .collect::<Result<_>>()?;
        let documents: Vec<String> = rows.iter().map(|r| r.document_id.to_string()).collect();
        let resolved: Vec<Resolved<'_>> = rows
            .iter()
            .zip(&types)
            .zip(&documents)
            .map(|((r, &entity_type), document)| Resolved {
                entity: r.entity,
                document,
                text: &r.name,
                entity_type,
            })
            .collect();
        let mut size: HashMap<i64, i64> = HashMap::new();
        for r in &rows {
            *size.entry(r.entity).or_default() += 1;
        }
        let canonical_of: HashMap<i64, i64> = rows.iter().map(|r| (r.mention, r.entity)).collect();
        let apart = self.separated_entities(&canonical_of).await?;
        let mut pairs: Vec<(i64, i64, Undecided, usize, usize)> = undecided(&resolved)
            .into_iter()
            .filter(|(a, b, ..)| !apart.contains(&(*a, *b)))
            .collect();
        pairs.sort_by_key(|(a, b, ..)| (std::cmp::Reverse(size[a] + size[b]), *a, *b));
        pairs.truncate(limit);
        let ids: Vec<i64> = pairs.iter().flat_map(|(a, b, ..)| [*a, *b]).collect();
        let claims = self.claims_by_entity(&ids).await?;
        let chunk_ids: Vec<i64> = pairs
            .iter()
            .flat_map(|(_, _, _, i, j)| [rows[*i].chunk_id, rows[*j].chunk_id])
            .collect();
        let chunks = self.chunk_texts(&chunk_ids).await?;
        // The names each chunk's mentions are written as: a side's sentence is one that
        // writes its name on its own, not inside a longer name of the chunk.
        let mut chunk_names: HashMap<i64, Vec<&str>> = HashMap::new();
        for r in &rows {
            if chunks.contains_key(&r.chunk_id) {
                chunk_names.entry(r.chunk_id).or_default().push(&r.name);
            }
        }
        let side = |i: usize| {
            let r = &rows[i];
            UndecidedSide {
                entity_id: r.entity,
                mention_id: r.mention,
                name: r.name.clone(),
                entity_type: r.entity_type.clone(),
                document_id: r.document_id,
                sentence: chunks.get(&r.chunk_id).and_then(|text| {
                    let names = chunk_names.get(&r.chunk_id).map_or(&[][..], Vec::as_slice);
                    sentence_naming(text, &r.name, names)
                }),
                described: r.described.clone(),
                mentions: size[&r.entity],
                claims: claims.get(&r.entity).copied().unwrap_or(0),
            }
        };
        Ok(pairs
            .into_iter()
            .map(|(_, _, why, i, j)| UndecidedPair {
                why,
                a: side(i),
                b: side(j),
            })
            .collect())
    }

    /// The text of each of the chunks `ids`.
    async fn chunk_texts(&self, ids: &[i64]) -> Result<HashMap<i64, String>> {
        Ok(
            sqlx::query_as("SELECT id, text FROM chunks WHERE id = ANY($1)")
                .bind(ids)
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .collect(),
        )
    }

    /// The pairs of entities (smaller id first) a person separated and that still hold,
    /// from the mentions' entities `canonical_of`.
    async fn separated_entities(
        &self,
        canonical_of: &HashMap<i64, i64>,
    ) -> Result<HashSet<(i64, i64)>> {
        let mut conn = self.pool.acquire().await?;
        Ok(decisions(&mut conn)
            .await?
            .apart
            .iter()
            .filter_map(|(a, b)| {
                let (a, b) = (*canonical_of.get(a)?, *canonical_of.get(b)?);
                Some((a.min(b), a.max(b)))
            })
            .collect())
    }

    /// How many claims each of the entities `ids` has, over all its mentions.
    async fn claims_by_entity(&self, ids: &[i64]) -> Result<HashMap<i64, i64>> {
        Ok(sqlx::query_as(
            "SELECT r.canonical_id, count(c.id)
               FROM entity_resolutions r JOIN claims c ON c.entity_id = r.entity_id
              WHERE r.canonical_id = ANY($1) GROUP BY r.canonical_id",
        )
        .bind(ids)
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .collect())
    }
}

/// The first sentence of `text` that writes `name` as whole words and not inside one of
/// the longer `names` ("Academy" in "the Academy's voting membership", not in "The Academy
/// Awards"); failing that, the first that writes it at all (as written, or in another
/// case).
fn sentence_naming(text: &str, name: &str, names: &[&str]) -> Option<String> {
    sentence_span_naming(text, name, names)
        .map(|(s, e)| text[s..e].split_whitespace().collect::<Vec<_>>().join(" "))
}

/// [`sentence_naming`]'s sentence as byte offsets in `text`.
pub(crate) fn sentence_span_naming(
    text: &str,
    name: &str,
    names: &[&str],
) -> Option<(usize, usize)> {
    let inside_longer = |at: usize| {
        names.iter().any(|longer| {
            longer.len() > name.len()
                && longer.contains(name)
                && text
                    .match_indices(longer)
                    .any(|(s, l)| s <= at && at + name.len() <= s + l.len())
        })
    };
    let mut from = 0;
    let mut alone = None;
    while let Some(at) = relata_core::names::find_word(&text[from..], name).map(|i| i + from) {
        if !inside_longer(at) {
            alone = Some(at);
            break;
        }
        from = at + name.len();
    }
    let at = alone
        .or_else(|| text.find(name))
        .or_else(|| text.to_lowercase().find(&name.to_lowercase()))?;
    relata_core::sentences::handled(text)
        .into_iter()
        .find(|&(s, e)| s <= at && at < e)
}

impl Loaded {
    fn mention(&self) -> Mention<'_> {
        Mention {
            document: &self.document,
            title: self.title.as_deref(),
            text: &self.name,
            start: self.start,
            entity_type: self.entity_type,
        }
    }
}

fn loaded(rows: &[sqlx::postgres::PgRow]) -> Result<Vec<Loaded>> {
    rows.iter()
        .map(|row| {
            let name: String = row.try_get("name")?;
            let chunk: String = row.try_get("text")?;
            let chunk_start: i32 = row.try_get("start_byte")?;
            let revision_id: i64 = row.try_get("revision_id")?;
            // A name is the chunk's own text; where it is not found verbatim the mention
            // sits at its chunk's start, where no in-text rule can place it next to
            // another name.
            let within = chunk.find(name.as_str()).unwrap_or(0);
            Ok(Loaded {
                id: row.try_get("id")?,
                revision_id,
                document: revision_id.to_string(),
                title: row.try_get("title")?,
                start: usize::try_from(chunk_start).unwrap_or(0) + within,
                entity_type: parse_label(row.try_get("entity_type")?)?,
                name,
            })
        })
        .collect()
}

async fn revision_texts(
    tx: &mut sqlx::PgConnection,
    mentions: impl IntoIterator<Item = &Loaded>,
) -> Result<HashMap<String, String>> {
    let ids: Vec<i64> = mentions
        .into_iter()
        .map(|m| m.revision_id)
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let rows = sqlx::query("SELECT id, text FROM document_revisions WHERE id = ANY($1)")
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await?;
    rows.iter()
        .map(|r| Ok((r.try_get::<i64, _>(0)?.to_string(), r.try_get(1)?)))
        .collect()
}

/// A person's decision about two mentions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decided {
    Apart,
    Together,
}

/// What people decided, pair by pair: for one pair of mentions only the later decision
/// holds (a join after a separation undoes it, and the other way round).
#[derive(Debug, Default)]
struct Decisions {
    apart: Vec<(i64, i64)>,
    together: Vec<(i64, i64)>,
}

async fn decisions(tx: &mut sqlx::PgConnection) -> Result<Decisions> {
    let rows: Vec<(i64, i64, bool)> = sqlx::query_as(
        "SELECT entity_id, other, together FROM (
             SELECT entity_id, apart_from AS other, false AS together, decided_at, id
               FROM entity_separations
             UNION ALL
             SELECT entity_id, joined_to, true, decided_at, id FROM entity_joins
             UNION ALL
             SELECT entity_id, joined_to, true, decided_at, id FROM promoted_join_proposals) d
         ORDER BY decided_at, together, id",
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut latest: BTreeMap<(i64, i64), (i64, i64, bool)> = BTreeMap::new();
    for (a, b, together) in rows {
        latest.insert((a.min(b), a.max(b)), (a, b, together));
    }
    let mut out = Decisions::default();
    for (a, b, together) in latest.into_values() {
        if together {
            out.together.push((a, b));
        } else {
            out.apart.push((a, b));
        }
    }
    Ok(out)
}

/// The joins people made between `mentions` (both must be among them).
fn person_joins(mentions: &[Loaded], together: &[(i64, i64)]) -> Vec<Join> {
    let index: HashMap<i64, usize> = mentions
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id, i))
        .collect();
    together
        .iter()
        .filter_map(|(a, b)| {
            Some(Join {
                a: *index.get(a)?,
                b: *index.get(b)?,
                rule: JoinRule::Person,
                evidence: None,
            })
        })
        .collect()
}

/// What placing `fresh` beside the commits takes: the advisory locks (its revisions, and
/// each name under the key it shares with the "NAME KIND" names `kind_name` may join it
/// to, "amazon" with "amazon river"), in one order for every taker so that two commits
/// never wait for each other in a cycle; and the name keys its neighbourhood is loaded by.
fn neighbourhood(fresh: &[Loaded]) -> (Vec<i64>, Vec<String>) {
    let own: Vec<String> = fresh.iter().map(|m| name_key(&m.name)).collect();
    let mut locks: Vec<i64> = fresh
        .iter()
        .map(|m| lock_key(&format!("entity-revision:{}", m.revision_id)))
        .chain(own.iter().map(|k| {
            let family = kind_name_head(k).unwrap_or(k);
            lock_key(&format!("entity-name:{family}"))
        }))
        .collect();
    locks.sort_unstable();
    locks.dedup();
    let mut keys: Vec<String> = own
        .iter()
        .flat_map(|k| std::iter::once(k.clone()).chain(kind_name_keys(k)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    (locks, keys)
}

/// One resolved mention, as [`Store::undecided_pairs`] reads it.
struct MentionRow {
    /// Its canonical entity.
    entity: i64,
    mention: i64,
    name: String,
    entity_type: String,
    document_id: i64,
    chunk_id: i64,
    described: Described,
}

/// Each of `near` that is resolved already: its entity and what its document was read as.
async fn known_placements(
    tx: &mut sqlx::PgConnection,
    near: &[Loaded],
) -> Result<HashMap<i64, (i64, Described)>> {
    let ids: Vec<i64> = near.iter().map(|m| m.id).collect();
    let rows = sqlx::query(concat!(
        "SELECT r.entity_id, r.canonical_id, ",
        described_columns!("r"),
        " FROM entity_resolutions r WHERE r.entity_id = ANY($1)"
    ))
    .bind(&ids)
    .fetch_all(&mut *tx)
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, (r.try_get(1)?, read_described(r, 2)?))))
        .collect()
}

/// Drop the joins a separation forbids: first the direct ones; then, while a separated
/// pair still ends up in one cluster through others, every join of the mention that was
/// separated, so it stands alone. Returns the joins kept and how many were dropped.
fn respect_separations(
    mentions: &[Loaded],
    mut found: Vec<Join>,
    apart: &[(i64, i64)],
) -> (Vec<Join>, u64) {
    let index: HashMap<i64, usize> = mentions
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id, i))
        .collect();
    let pairs: Vec<(usize, usize)> = apart
        .iter()
        .filter_map(|(a, b)| Some((*index.get(a)?, *index.get(b)?)))
        .collect();
    let before = found.len();
    found.retain(|j| {
        !pairs
            .iter()
            .any(|&(a, b)| (j.a, j.b) == (a, b) || (j.a, j.b) == (b, a))
    });
    for &(a, b) in &pairs {
        let cluster = clusters(mentions.len(), &found);
        if cluster[a] == cluster[b] {
            found.retain(|j| j.a != a && j.b != a);
        }
    }
    let dropped = (before - found.len()) as u64;
    (found, dropped)
}

/// Each mention's placement under `kept`: the cluster's first mention founds it; every
/// other mention is placed by the join through which a breadth-first walk from the first
/// mention reaches it, so each row names one join that can be shown and undone.
fn place(mentions: &[Loaded], kept: &[Join], texts: &HashMap<String, String>) -> Vec<Placement> {
    let cluster = clusters(mentions.len(), kept);
    let mut edges: Vec<Vec<&Join>> = vec![Vec::new(); mentions.len()];
    for j in kept {
        edges[j.a].push(j);
        edges[j.b].push(j);
    }
    let mut placed: Vec<Option<Placement>> = vec![None; mentions.len()];
    for root in 0..mentions.len() {
        if cluster[root] != root {
            continue;
        }
        placed[root] = Some(founding(&mentions[root]));
        let mut queue = VecDeque::from([root]);
        while let Some(at) = queue.pop_front() {
            for j in &edges[at] {
                let next = if j.a == at { j.b } else { j.a };
                if placed[next].is_none() {
                    placed[next] = Some(joined(mentions, next, at, j, mentions[root].id, texts));
                    queue.push_back(next);
                }
            }
        }
    }
    placed
        .into_iter()
        .map(|p| p.expect("every mention is in a cluster"))
        .collect()
}

/// Placements for the new mentions of `near` (those `known` lacks): joined to a known
/// mention, they take its entity (the oldest, when several); joined only to other new
/// ones, they found one.
fn attach(
    near: &[Loaded],
    kept: &[Join],
    texts: &HashMap<String, String>,
    known: &HashMap<i64, i64>,
) -> Vec<Option<Placement>> {
    let fresh: Vec<bool> = near.iter().map(|m| !known.contains_key(&m.id)).collect();
    let mut placed: Vec<Option<Placement>> = vec![None; near.len()];
    let mut queue = VecDeque::new();
    for (i, m) in near.iter().enumerate() {
        if let Some(&canonical) = known.get(&m.id) {
            placed[i] = Some(Placement {
                canonical_id: canonical,
                rule: Resolution::First,
                joined_to: None,
                evidence: None,
                name_key: String::new(),
                described: Described::default(),
            });
            queue.push_back(i);
        }
    }
    let mut order: Vec<usize> = queue.iter().copied().collect();
    order.sort_by_key(|&i| placed[i].as_ref().map(|p| p.canonical_id));
    let mut queue: VecDeque<usize> = order.into();
    let mut edges: Vec<Vec<&Join>> = vec![Vec::new(); near.len()];
    for j in kept {
        edges[j.a].push(j);
        edges[j.b].push(j);
    }
    let walk = |queue: &mut VecDeque<usize>, placed: &mut Vec<Option<Placement>>| {
        while let Some(at) = queue.pop_front() {
            let canonical = placed[at]
                .as_ref()
                .expect("queued once placed")
                .canonical_id;
            for j in &edges[at] {
                let next = if j.a == at { j.b } else { j.a };
                if fresh[next] && placed[next].is_none() {
                    placed[next] = Some(joined(near, next, at, j, canonical, texts));
                    queue.push_back(next);
                }
            }
        }
    };
    walk(&mut queue, &mut placed);
    for i in 0..near.len() {
        if placed[i].is_none() {
            placed[i] = Some(founding(&near[i]));
            queue.push_back(i);
            walk(&mut queue, &mut placed);
        }
    }
    // Only the new mentions are written; the known ones keep their rows.
    placed
        .into_iter()
        .zip(&fresh)
        .map(|(p, &new)| p.filter(|_| new))
        .collect()
}

fn founding(m: &Loaded) -> Placement {
    Placement {
        canonical_id: m.id,
        rule: Resolution::First,
        joined_to: None,
        evidence: None,
        name_key: name_key(&m.name),
        described: Described::default(),
    }
}

fn joined(
    mentions: &[Loaded],
    next: usize,
    through: usize,
    join: &Join,
    canonical_id: i64,
    texts: &HashMap<String, String>,
) -> Placement {
    let m = &mentions[next];
    let evidence = join.evidence.and_then(|(start, end)| {
        let quote = texts.get(&m.document)?.get(start..end)?.to_owned();
        Some(Evidence {
            revision_id: m.revision_id,
            start: i32::try_from(start).ok()?,
            end: i32::try_from(end).ok()?,
            quote,
        })
    });
    Placement {
        canonical_id,
        rule: Resolution::of(join.rule),
        joined_to: Some(mentions[through].id),
        evidence,
        name_key: name_key(&m.name),
        described: Described::default(),
    }
}

fn summarize(placements: &[Placement]) -> ResolveSummary {
    let mut summary = ResolveSummary {
        mentions: placements.len() as u64,
        ..ResolveSummary::default()
    };
    for p in placements {
        *summary.by_rule.entry(p.rule.as_str()).or_default() += 1;
        if p.rule == Resolution::First {
            summary.canonical_entities += 1;
        }
    }
    summary
}

/// Upsert the placements that differ from what is stored; returns how many were written.
async fn write<'a>(
    tx: &mut sqlx::PgConnection,
    placements: impl Iterator<Item = (&'a Loaded, &'a Placement)>,
) -> Result<u64> {
    let mut cols = Columns::default();
    for (m, p) in placements {
        cols.entity.push(m.id);
        cols.canonical.push(p.canonical_id);
        cols.rule.push(p.rule.as_str());
        cols.joined_to.push(p.joined_to);
        cols.ev_revision
            .push(p.evidence.as_ref().map(|e| e.revision_id));
        cols.ev_start.push(p.evidence.as_ref().map(|e| e.start));
        cols.ev_end.push(p.evidence.as_ref().map(|e| e.end));
        cols.ev_quote
            .push(p.evidence.as_ref().map(|e| e.quote.clone()));
        cols.key.push(p.name_key.clone());
        cols.entity_type.push(m.entity_type.as_str());
        cols.title.push(p.described.title.clone());
        cols.longer.push(p.described.longer.clone());
        cols.kind.push(p.described.kind.clone());
        cols.year.push(p.described.year.clone());
        cols.maker.push(p.described.maker.clone());
    }
    let written = sqlx::query(
        "INSERT INTO entity_resolutions AS r (entity_id, canonical_id, rule, joined_to,
             evidence_revision_id, evidence_start, evidence_end, evidence_quote, name_key,
             entity_type, described_title, described_longer, described_kind, described_year,
             described_maker, rules_version)
         SELECT u.*, $16 FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[],
             $5::bigint[], $6::int[], $7::int[], $8::text[], $9::text[], $10::text[],
             $11::text[], $12::text[], $13::text[], $14::text[], $15::text[]) AS u
         ON CONFLICT (entity_id) DO UPDATE SET
             canonical_id = EXCLUDED.canonical_id, rule = EXCLUDED.rule,
             joined_to = EXCLUDED.joined_to,
             evidence_revision_id = EXCLUDED.evidence_revision_id,
             evidence_start = EXCLUDED.evidence_start, evidence_end = EXCLUDED.evidence_end,
             evidence_quote = EXCLUDED.evidence_quote, name_key = EXCLUDED.name_key,
             entity_type = EXCLUDED.entity_type,
             described_title = EXCLUDED.described_title,
             described_longer = EXCLUDED.described_longer,
             described_kind = EXCLUDED.described_kind,
             described_year = EXCLUDED.described_year,
             described_maker = EXCLUDED.described_maker,
             rules_version = EXCLUDED.rules_version, resolved_at = now()
         WHERE (r.canonical_id, r.rule, r.joined_to, r.evidence_revision_id,
                r.evidence_start, r.evidence_end, r.evidence_quote, r.name_key,
                r.described_title, r.described_longer, r.described_kind, r.described_year,
                r.described_maker, r.rules_version)
               IS DISTINCT FROM
               (EXCLUDED.canonical_id, EXCLUDED.rule, EXCLUDED.joined_to,
                EXCLUDED.evidence_revision_id, EXCLUDED.evidence_start,
                EXCLUDED.evidence_end, EXCLUDED.evidence_quote, EXCLUDED.name_key,
                EXCLUDED.described_title, EXCLUDED.described_longer,
                EXCLUDED.described_kind, EXCLUDED.described_year, EXCLUDED.described_maker,
                EXCLUDED.rules_version)",
    )
    .bind(&cols.entity)
    .bind(&cols.canonical)
    .bind(&cols.rule)
    .bind(&cols.joined_to)
    .bind(&cols.ev_revision)
    .bind(&cols.ev_start)
    .bind(&cols.ev_end)
    .bind(&cols.ev_quote)
    .bind(&cols.key)
    .bind(&cols.entity_type)
    .bind(&cols.title)
    .bind(&cols.longer)
    .bind(&cols.kind)
    .bind(&cols.year)
    .bind(&cols.maker)
    .bind(RULES_VERSION)
    .execute(&mut *tx)
    .await?;
    Ok(written.rows_affected())
}

#[derive(Default)]
struct Columns<'a> {
    entity: Vec<i64>,
    canonical: Vec<i64>,
    rule: Vec<&'a str>,
    joined_to: Vec<Option<i64>>,
    ev_revision: Vec<Option<i64>>,
    ev_start: Vec<Option<i32>>,
    ev_end: Vec<Option<i32>>,
    ev_quote: Vec<Option<String>>,
    key: Vec<String>,
    entity_type: Vec<&'static str>,
    title: Vec<Option<String>>,
    longer: Vec<Option<String>>,
    kind: Vec<Option<String>>,
    year: Vec<Option<String>>,
    maker: Vec<Option<String>>,
}
