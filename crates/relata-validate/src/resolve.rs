//! Deterministic entity resolution: which stored mentions name the same thing, by which
//! rule, with what evidence. Each rule is a documented join that can be explained (the
//! rule, and for a join the text gives, the bytes that give it) and undone; none joins two
//! mentions of different types, so a homonym with an incompatible type ("Georgia" the
//! country and a person) is never joined by a rule. What a rule cannot decide is left
//! apart, for a person or a model's evidenced proposal.
//!
//! The rules, each measured on the labelled mention set (`tests/data/mentions.json`,
//! BENCHMARKS.md §3f):
//! * [`JoinRule::SameName`] — the same name once normalised (Unicode composition, case,
//!   spacing, an abbreviation's full stops, a leading "the", a possessive), across
//!   documents, unless the documents describe two things ([`Described`]: two qualified
//!   titles, two longer names a short one stands for, two kinds of place, two years).
//! * [`JoinRule::AliasInText`] — two mentions of one document that the text itself gives
//!   as names of one thing: `X (Y)`, `X, also known as Y`, `X, more commonly known as Y`,
//!   `X, officially Y`, `X or Y`, `X, commonly abbreviated as Y`. The evidence is the byte
//!   range from X to Y.
//! * [`JoinRule::ShortName`] — in one document, a person's surname or given name used
//!   after their full name, or an acronym of a name given before it.
//! * [`JoinRule::KindName`] — "X KIND" ("Amazon River") and the one established thing
//!   called "X" that its documents call that kind.

use std::collections::HashMap;

use relata_core::{EntityType, closed_enum};

mod described;

pub use described::{Apart, Described};

closed_enum! {
    /// How two mentions were joined: by one of the rules, or by a person.
    pub enum JoinRule: "join rule" {
        SameName = "same_name",
        AliasInText = "alias_in_text",
        ShortName = "short_name",
        /// A name and the same name with the kind word its documents call it after it:
        /// "the Amazon", which two documents call a river, and "Amazon River"; "New
        /// York", established as a city, and "New York City".
        KindName = "kind_name",
        /// A named person's decision, recorded in the store (`relata entities join`): the
        /// join no rule may make, across types or between names the text never links.
        /// [`joins`] never returns it.
        Person = "person",
    }
}

/// A stored mention: the document it is in and its title, its text exactly as written
/// there and its UTF-8 byte offset, and its type.
#[derive(Debug, Clone, Copy)]
pub struct Mention<'a> {
    pub document: &'a str,
    pub title: Option<&'a str>,
    pub text: &'a str,
    pub start: usize,
    pub entity_type: EntityType,
}

impl Mention<'_> {
    fn end(&self) -> usize {
        self.start + self.text.len()
    }
}

/// One join between mentions `a` and `b` (indices), with its rule and, where the text
/// gives it, the byte range of its document that is the evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Join {
    pub a: usize,
    pub b: usize,
    pub rule: JoinRule,
    pub evidence: Option<(usize, usize)>,
}

/// The name a mention stands for once its form is set aside: composed, case-folded,
/// spacing collapsed, an abbreviation's full stops, a leading "the" and a trailing
/// possessive removed.
pub fn name_key(text: &str) -> String {
    let key = without_full_stops(&crate::normalize::key(text));
    let key = key.replace('’', "'");
    // Only "the": a leading "A" or "An" is part of a title ("A Christmas Carol" is not a
    // Christmas carol), where "The Acropolis" is the Acropolis.
    let key = key.strip_prefix("the ").unwrap_or(&key).to_owned();
    key.strip_suffix("'s")
        .or_else(|| key.strip_suffix('\''))
        .unwrap_or(&key)
        .trim()
        .to_owned()
}

/// `key` without the full stops that end an abbreviation or an initial: "Washington, D.C."
/// and "Washington, DC", "St. Louis" and "St Louis" are one name written two ways. A full
/// stop inside a word stays ("Amazon.com").
fn without_full_stops(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    let mut out = String::with_capacity(key.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == '.' {
            let ends_word = chars
                .get(i + 1)
                .is_none_or(|n| n.is_whitespace() || *n == ',');
            // One letter before it, after a space, a full stop or the start: an initial.
            let initial = i >= 1
                && chars[i - 1].is_alphabetic()
                && (i == 1 || chars[i - 2].is_whitespace() || chars[i - 2] == '.');
            if ends_word || initial {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// What may stand between two names the text gives for one thing ("X (Y)", "X, also
/// known as Y").
const ALIAS_LINKS: &[&str] = &[
    " (",
    ", also known as ",
    " (also known as ",
    ", also called ",
    " (also called ",
    ", more commonly known as ",
    ", commonly known as ",
    " (commonly known as ",
    ", officially ",
    " (officially ",
    " or ",
    " (or ",
];

/// Whether `gap` is a link of [`ALIAS_LINKS`] or an abbreviation's ("X, commonly
/// abbreviated as Y", "X, often abbreviated to Y"), followed or not by "the" before the
/// second name ("X, more commonly known as the Oscars", "X, officially the Y").
fn is_alias_link(gap: &str) -> bool {
    let link = |g: &str| ALIAS_LINKS.contains(&g) || abbreviation_link(g) || naming_link(g);
    link(gap) || gap.strip_suffix("the ").is_some_and(link)
}

/// Whether mention `m` is its document's title where the text opens with it ("World War
/// II, or the Second World War, was …"): the lead sentence that names its subject.
fn leads_with_title(text: &str, m: &Mention<'_>) -> bool {
    m.title.is_some_and(|title| {
        let (title, _) = relata_core::names::unqualified_title(title);
        name_key(m.text) == name_key(title)
            && text[..m.start]
                .trim()
                .strip_prefix("The")
                .unwrap_or(text[..m.start].trim())
                .trim()
                .is_empty()
    })
}

/// ", or " with or without "the" after it: in the lead sentence, after the title, another
/// name for it ("World War I, or the First World War"); anywhere else, often a list's last
/// item ("France, Spain, or Italy"), so it is read there only.
fn lead_or(gap: &str) -> bool {
    matches!(gap, ", or " | ", or the ")
}

/// Words that may stand in a naming phrase without changing what it says: "also", "more
/// commonly", "simply" in "X, often referred to simply as Y".
const NAMING_ADVERBS: &[&str] = &[
    "also",
    "more",
    "most",
    "often",
    "commonly",
    "simply",
    "better",
    "historically",
    "formerly",
    "sometimes",
    "usually",
    "popularly",
    "mononymously",
    "federally",
    "officially",
    "widely",
    "generally",
];

/// The phrases that give a second name for a thing, once [`NAMING_ADVERBS`] are set aside.
const NAMING_PHRASES: &[&str] = &[
    "known as",
    "known by his initials",
    "known by her initials",
    "known by its initials",
    "called",
    "referred to as",
    "shortened to",
    "nicknamed",
    "designated as",
    "born",
];

/// ", [and] ADVERBS PHRASE " or " (ADVERBS PHRASE ", and " or simply ": how a summary
/// gives another name in a phrase ("Siddhartha Gautama, most commonly referred to as the
/// Buddha", "Tenzing Norgay, born Namgyal Wangdi", "The Tragedy of Hamlet, Prince of
/// Denmark, often shortened to Hamlet", "District of Columbia and commonly known as
/// Washington", "Sandro Botticelli … or simply Botticelli"). The phrase must follow a
/// comma or a parenthesis, or "and": "Jesus called Peter" names no one twice.
fn naming_link(gap: &str) -> bool {
    let Some(rest) = gap.strip_suffix(' ') else {
        return false;
    };
    if let Some(r) = rest.strip_prefix(" or ") {
        return r.split(' ').all(|w| w == "simply");
    }
    let Some(rest) = rest
        .strip_prefix(", and ")
        .or_else(|| rest.strip_prefix(" and "))
        .or_else(|| rest.strip_prefix(", "))
        .or_else(|| rest.strip_prefix(" ("))
    else {
        return false;
    };
    let phrase: Vec<&str> = rest
        .split(' ')
        .filter(|w| !NAMING_ADVERBS.contains(w))
        .collect();
    NAMING_PHRASES.contains(&phrase.join(" ").as_str())
}

/// ", abbreviated ", with one of a few adverbs before "abbreviated" and "as" or "to" after
/// it: how a summary gives a short name ("The chimpanzee, commonly abbreviated to chimp").
fn abbreviation_link(gap: &str) -> bool {
    let Some(rest) = gap.strip_prefix(", ").and_then(|g| g.strip_suffix(' ')) else {
        return false;
    };
    let rest = [
        "commonly ",
        "often ",
        "sometimes ",
        "frequently ",
        "also ",
        "usually ",
    ]
    .iter()
    .find_map(|a| rest.strip_prefix(a))
    .unwrap_or(rest);
    matches!(rest, "abbreviated" | "abbreviated as" | "abbreviated to")
}

/// Whether `text` gives `a` and `b` as names of one thing, one right after the other
/// across a link of [`ALIAS_LINKS`], in either order ("The Academy Awards, more commonly
/// known as the Oscars"): the evidence [`JoinRule::AliasInText`] joins on, read from a
/// chunk.
pub(crate) fn aliases_in(text: &str, a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() || b.is_empty() {
        return false;
    }
    // The longest link is ", more commonly known as the ": a name further on is not given
    // by the link.
    const REACH: usize = 40;
    let given = |x: &str, y: &str| {
        text.match_indices(x).any(|(at, _)| {
            let from = at + x.len();
            text[from..]
                .match_indices(y)
                .take_while(|(k, _)| *k <= REACH)
                .any(|(k, _)| {
                    let end = from + k + y.len();
                    is_alias_link(&text[from..from + k])
                        && !text[end..]
                            .chars()
                            .next()
                            .is_some_and(char::is_alphanumeric)
                })
        })
    };
    given(a, b) || given(b, a)
}

/// The words of a name that an acronym takes its letters from.
fn initials(name: &str) -> String {
    name.split(|c: char| c.is_whitespace() || c == '-')
        .filter(|w| {
            !matches!(
                w.to_lowercase().as_str(),
                "of" | "and" | "the" | "for" | "&"
            )
        })
        .filter_map(|w| w.chars().next())
        .filter(|c| c.is_uppercase())
        .collect()
}

fn is_acronym(text: &str) -> bool {
    text.chars().count() >= 2 && text.chars().all(|c| c.is_uppercase() || c.is_ascii_digit())
}

/// What the rules decide among a set of mentions.
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    /// Every join the rules make, between mentions of one type only.
    pub joins: Vec<Join>,
    /// What each mention's document describes it as (indexed like the mentions).
    pub described: Vec<Described>,
    /// The mentions `same_name` would have joined and did not (the later mention, the
    /// first of the group it was kept from, and which reading kept them apart).
    pub kept_apart: Vec<(usize, usize, Apart)>,
}

/// Every join the rules make among `mentions` ([`resolve`]'s joins).
pub fn joins<'t>(mentions: &[Mention<'_>], text_of: impl Fn(&str) -> Option<&'t str>) -> Vec<Join> {
    resolve(mentions, text_of, &HashMap::new()).joins
}

/// Resolve `mentions`: `text_of` gives a document's text (for the alias rule's evidence and
/// what a document describes a name as); `known` gives, for a mention whose document is
/// not read here (an existing entity's first mention, beside the commits), what its
/// entity's mentions were described as.
pub fn resolve<'t>(
    mentions: &[Mention<'_>],
    text_of: impl Fn(&str) -> Option<&'t str>,
    known: &HashMap<usize, Described>,
) -> Resolution {
    // Each mention's key, read once for all three steps.
    let keys: Vec<String> = mentions.iter().map(|m| name_key(m.text)).collect();
    let mut out = in_text_joins(mentions, &keys, &text_of);
    let mut described = described::describe(mentions, &keys, &text_of, &out);
    for (&i, d) in known {
        if let Some(slot) = described.get_mut(i) {
            slot.clone_from(d);
        }
    }
    let kept_apart = same_name_joins(mentions, &keys, &described, &text_of, &mut out);
    Resolution {
        joins: out,
        described,
        kept_apart,
    }
}

/// The joins within a document, in text order: an alias the text gives, a short form after
/// the full name.
fn in_text_joins<'t>(
    mentions: &[Mention<'_>],
    keys: &[String],
    text_of: &impl Fn(&str) -> Option<&'t str>,
) -> Vec<Join> {
    let mut out = Vec::new();
    // Within a document, in text order.
    let mut by_doc: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, m) in mentions.iter().enumerate() {
        by_doc.entry(m.document).or_default().push(i);
    }
    let mut docs: Vec<_> = by_doc.into_iter().collect();
    docs.sort();
    for (doc, mut idx) in docs {
        idx.sort_by_key(|&i| mentions[i].start);
        let text = text_of(doc);
        for (p, &i) in idx.iter().enumerate() {
            for &j in &idx[p + 1..] {
                let (a, b) = (&mentions[i], &mentions[j]);
                if a.entity_type != b.entity_type || keys[i] == keys[j] {
                    continue;
                }
                // The text names both, one right after the other, as one thing.
                if let Some(t) = text
                    && a.end() <= b.start
                    && let Some(gap) = t.get(a.end()..b.start)
                    && (is_alias_link(gap) || (leads_with_title(t, a) && lead_or(gap)))
                {
                    out.push(Join {
                        a: i,
                        b: j,
                        rule: JoinRule::AliasInText,
                        evidence: Some((a.start, b.end())),
                    });
                    continue;
                }
                // A short form after the full name.
                let full: Vec<&str> = a.text.split_whitespace().collect();
                let short = b.text.trim_end_matches("'s").trim_end_matches('’');
                let person_part = a.entity_type == EntityType::Person
                    && full.len() >= 2
                    && !short.contains(' ')
                    && (full.last() == Some(&short) || full.first() == Some(&short));
                let acronym = is_acronym(short) && initials(a.text) == short;
                if person_part || acronym {
                    out.push(Join {
                        a: i,
                        b: j,
                        rule: JoinRule::ShortName,
                        evidence: None,
                    });
                }
            }
        }
    }
    out
}

/// A group [`same_name_joins`] builds: mentions of one name and type it takes for one
/// thing.
struct Group {
    first: usize,
    /// Its member of the smallest index, which a mention whose document says nothing
    /// joins: the one a store resolving commit by commit joined it to.
    earliest: usize,
    described: Described,
    /// The members that say what the name stands for.
    describing: Vec<usize>,
}
impl Group {
    /// Whether what the group is described as is more than one document's reading,
    /// which may be wrong: a title says it, or two documents do, or an acronym is
    /// spelt out letter for letter ("Blood pressure (BP)"), which is a definition.
    fn established(&self, mentions: &[Mention<'_>], described: &[Described]) -> bool {
        self.describing.iter().any(|&d| {
            described[d].title.is_some()
                || mentions[d].document != mentions[self.first].document
                || described[d]
                    .longer
                    .as_deref()
                    .is_some_and(|l| spelt_out(mentions[d].text, l))
        })
    }
}

/// The same name and type, in any documents. The mentions whose documents say what the
/// name stands for ([`Described`]) go first: each joins the first group of its name whose
/// description does not conflict with its own, or founds one. Then the rest, whose
/// documents say nothing: each joins the first group, unless two or more groups are
/// *established* (a title, two documents, or an acronym spelt out letter for letter says
/// what each is: "Georgia (country)", "the state of Georgia" in two summaries, "Blood
/// pressure (BP)"). Then a rule cannot tell which one "Georgia" in a list of places is:
/// the mention joins one only where its document's title is qualified as that group's
/// titles are, or its document shares more names with that group's describing documents
/// than with any other's; otherwise it joins the other mentions of the name whose
/// documents say not which, apart from the established things, for a person to place
/// (`relata entities undecided`). One document's reading alone may be wrong ("Europe"
/// read as short for whatever an aside in parentheses gave), so it withholds only its
/// own mention's join.
fn same_name_joins<'m, 't>(
    mentions: &[Mention<'m>],
    keys: &[String],
    described: &[Described],
    text_of: &impl Fn(&str) -> Option<&'t str>,
    out: &mut Vec<Join>,
) -> Vec<(usize, usize, Apart)> {
    let mut groups: HashMap<(&str, EntityType), Vec<Group>> = HashMap::new();
    // The first mention of each name kept from two established things.
    let mut unplaced: HashMap<(&str, EntityType), usize> = HashMap::new();
    let mut kept_apart = Vec::new();
    let mut context = Context::default();
    let said = (0..mentions.len()).filter(|&i| !described[i].is_empty());
    let unsaid = (0..mentions.len()).filter(|&i| described[i].is_empty());
    for i in said.chain(unsaid) {
        let m = &mentions[i];
        if keys[i].is_empty() {
            continue;
        }
        let list = groups.entry((keys[i].as_str(), m.entity_type)).or_default();
        if described[i].is_empty() && list.len() >= 2 {
            let established = established_among(list, mentions, described);
            let among = |gs: &[usize], context: &mut Context<'m>| {
                let owned = own_describing(list, gs, mentions, described);
                let describing: Vec<&[usize]> = owned.iter().map(Vec::as_slice).collect();
                context
                    .choose(mentions, i, &keys[i], &describing, text_of)
                    .map(|c| gs[c])
            };
            let chosen = match established[..] {
                [g] => Some(g),
                // No two things established: as for one thing, the first group.
                [] => Some(0),
                _ => among(&established, &mut context),
            };
            match chosen {
                Some(g) => {
                    out.push(Join {
                        a: list[g].earliest,
                        b: i,
                        rule: JoinRule::SameName,
                        evidence: None,
                    });
                    list[g].earliest = list[g].earliest.min(i);
                }
                // Kept from the established things, and with the other mentions of the
                // name whose documents say not which: one entity, "Georgia, which one
                // not said", for a person to place (and "BC" the era, in 149 summaries,
                // one entity apart from the "BC"s two summaries spell out).
                None => {
                    kept_apart.push((i, list[0].first, Apart::Unsaid));
                    match unplaced.entry((keys[i].as_str(), m.entity_type)) {
                        std::collections::hash_map::Entry::Occupied(e) => out.push(Join {
                            a: *e.get(),
                            b: i,
                            rule: JoinRule::SameName,
                            evidence: None,
                        }),
                        std::collections::hash_map::Entry::Vacant(e) => {
                            e.insert(i);
                        }
                    }
                }
            }
            continue;
        }
        let mut refused = None;
        let mut joined = false;
        for g in list.iter_mut() {
            match g.described.apart_from(&described[i]) {
                Some(why) => {
                    refused.get_or_insert((i, g.first, why));
                }
                None => {
                    out.push(Join {
                        a: g.earliest,
                        b: i,
                        rule: JoinRule::SameName,
                        evidence: None,
                    });
                    g.earliest = g.earliest.min(i);
                    g.described.absorb(&described[i]);
                    if !described[i].is_empty() {
                        g.describing.push(i);
                    }
                    joined = true;
                    break;
                }
            }
        }
        // The join the first group refused is the one the name alone would have made.
        kept_apart.extend(refused);
        if !joined {
            list.push(Group {
                first: i,
                earliest: i,
                described: described[i].clone(),
                describing: if described[i].is_empty() {
                    Vec::new()
                } else {
                    vec![i]
                },
            });
        }
    }
    kind_name_joins(mentions, described, &groups, out);
    kept_apart
}

/// The groups of one name among which a mention whose document says nothing must be
/// placed by evidence: the established ones; and where an established thing is dated ("In
/// 1783, in the Treaty of Paris" in two summaries), every dated one, since the documents
/// date several things of the name ("the December 1898 Treaty of Paris").
fn established_among(
    list: &[Group],
    mentions: &[Mention<'_>],
    described: &[Described],
) -> Vec<usize> {
    let established: Vec<bool> = list
        .iter()
        .map(|g| g.established(mentions, described))
        .collect();
    let dated = |g: usize| list[g].described.year.is_some();
    let any_dated = (0..list.len()).any(|g| established[g] && dated(g));
    (0..list.len())
        .filter(|&g| established[g] || (any_dated && dated(g)))
        .collect()
}

/// The describing members of each of the groups `gs` whose documents speak for it: a
/// document speaks for the thing its title names, so the state's summary, which also
/// names the city ("the municipality of São Paulo"), is not the city's evidence.
fn own_describing(
    list: &[Group],
    gs: &[usize],
    mentions: &[Mention<'_>],
    described: &[Described],
) -> Vec<Vec<usize>> {
    let titled_elsewhere = |g: usize, d: usize| {
        gs.iter().filter(|&&h| h != g).any(|&h| {
            list[h].describing.iter().any(|&e| {
                mentions[e].document == mentions[d].document && described[e].title.is_some()
            })
        })
    };
    gs.iter()
        .map(|&g| {
            let mut own = list[g].describing.clone();
            own.retain(|&d| !titled_elsewhere(g, d));
            own
        })
        .collect()
}

/// [`JoinRule::KindName`]: a name "X KIND" (its last word a kind word) joins the one
/// established thing called "X" that its documents call that kind, where "X KIND" is one
/// thing. A name no document calls a kind, or two things called "X" of that kind, join
/// nothing.
fn kind_name_joins(
    mentions: &[Mention<'_>],
    described: &[Described],
    groups: &HashMap<(&str, EntityType), Vec<Group>>,
    out: &mut Vec<Join>,
) {
    let mut found: Vec<Join> = Vec::new();
    for (&(key, entity_type), longer) in groups {
        let ([named], Some((head, kind))) = (&longer[..], kind_name_split(key)) else {
            continue;
        };
        let Some(short) = groups.get(&(head, entity_type)) else {
            continue;
        };
        let of_kind: Vec<&Group> = short
            .iter()
            .filter(|g| {
                g.described.kind.as_deref() == Some(kind) && g.established(mentions, described)
            })
            .collect();
        if let [thing] = of_kind[..] {
            found.push(Join {
                a: thing.earliest.min(named.earliest),
                b: thing.earliest.max(named.earliest),
                rule: JoinRule::KindName,
                evidence: None,
            });
        }
    }
    found.sort_by_key(|j| (j.a, j.b));
    out.extend(found);
}

/// The name (a [`name_key`]) a key is "NAME KIND" of, where its last word is a kind
/// word: the name [`JoinRule::KindName`] may join it to, which is also the key both are
/// serialised under beside the commits.
pub fn kind_name_head(key: &str) -> Option<&str> {
    kind_name_split(key).map(|(head, _)| head)
}

/// A "NAME KIND" key's head and the kind its last word gives.
fn kind_name_split(key: &str) -> Option<(&str, &'static str)> {
    let (head, word) = key.rsplit_once(' ')?;
    Some((head, described::kind_word(word)?))
}

/// Every key [`JoinRule::KindName`] may join `key` with: its head ("amazon" for "amazon
/// river"), and the key with each kind word after it ("amazon river", "amazon lake" …).
pub fn kind_name_keys(key: &str) -> Vec<String> {
    kind_name_head(key)
        .map(str::to_owned)
        .into_iter()
        .chain(described::kind_words().map(|w| format!("{key} {w}")))
        .collect()
}

/// Whether `longer` (a [`name_key`]) spells out the acronym `short` letter for letter, the
/// small words aside ("blood pressure" for "BP", "age of discovery" for "AD").
fn spelt_out(short: &str, longer: &str) -> bool {
    let short = described::bare(short);
    is_acronym(short) && initials(&longer.to_uppercase()) == short
}

/// What a title's parentheses say of which thing of its name it is ("World War I" of
/// "Western Front (World War I)").
fn qualifier(title: Option<&str>) -> Option<&str> {
    let title = title?.trim();
    let (name, qualified) = relata_core::names::unqualified_title(title);
    qualified.then(|| {
        title[name.len()..]
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
    })
}

/// The names each document gives ([`relata_core::names::candidates`], as [`name_key`]s),
/// read once per document.
#[derive(Default)]
struct Context<'m> {
    names: HashMap<&'m str, std::collections::HashSet<String>>,
}

impl<'m> Context<'m> {
    fn of<'t>(
        &mut self,
        m: &Mention<'m>,
        text_of: &impl Fn(&str) -> Option<&'t str>,
    ) -> &std::collections::HashSet<String> {
        self.names.entry(m.document).or_insert_with(|| {
            text_of(m.document)
                .map(|text| {
                    relata_core::names::candidates(text, m.title)
                        .iter()
                        .map(|n| name_key(n))
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// The group (an index into `groups`, each given by its describing members) that
    /// mention `i`'s document points to: the one whose titles are qualified as its title
    /// is, or whose documents share more names other than `key` with it than any other
    /// group's do.
    fn choose<'t>(
        &mut self,
        mentions: &[Mention<'m>],
        i: usize,
        key: &str,
        groups: &[&[usize]],
        text_of: &impl Fn(&str) -> Option<&'t str>,
    ) -> Option<usize> {
        // The collection's own word first: a title qualified as one group's describing
        // titles are ("Italian front (World War I)", "Western Front (World War I)").
        if let Some(q) = qualifier(mentions[i].title) {
            let with: Vec<usize> = (0..groups.len())
                .filter(|&g| {
                    groups[g]
                        .iter()
                        .any(|&d| qualifier(mentions[d].title) == Some(q))
                })
                .collect();
            if let [g] = with[..] {
                return Some(g);
            }
        }
        let mine = self.of(&mentions[i], text_of).clone();
        let mut scores: Vec<(usize, usize)> = groups
            .iter()
            .enumerate()
            .map(|(g, describing)| {
                let mut theirs = std::collections::HashSet::new();
                for &d in *describing {
                    theirs.extend(self.of(&mentions[d], text_of).iter().cloned());
                }
                let shared = mine
                    .iter()
                    .filter(|n| n.as_str() != key && theirs.contains(*n))
                    .count();
                (shared, g)
            })
            .collect();
        scores.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let (best, g) = scores[0];
        let second = scores.get(1).map_or(0, |s| s.0);
        (best > second).then_some(g)
    }
}

closed_enum! {
    /// Why two entities the rules keep apart are put before a person: the names say they
    /// may be one thing, and no rule may decide it.
    pub enum Undecided: "undecided pair" {
        /// The same name and type, which `same_name` kept apart because their documents
        /// describe two things ([`Described`]: "the state of Georgia", "Georgia is a
        /// country"), or because one says nothing and two things of the name are
        /// established ([`Apart::Unsaid`]); a person who knows better may join them.
        DescribedApart = "described_apart",
        /// The same name, as [`JoinRule::SameName`] reads it, under two types ("Faust" the
        /// legend's hero and Goethe's play, or one of them mistyped): no rule joins across
        /// types.
        OtherType = "other_type",
        /// A person named by one word in one entity, and a person whose full name ends in
        /// that word in another ("Clarke", "Arthur C. Clarke"): [`JoinRule::ShortName`]
        /// joins a surname only within the document that gives the full name. Not where
        /// the one word's own entity holds a full name it is short for ("Johnson" with
        /// "Lyndon B. Johnson" is not put against "Andrew Johnson").
        Surname = "surname",
        /// Two people's names of two words or more, one the other with names left out
        /// ("Woodrow Wilson", "Thomas Woodrow Wilson"; but also "John Adams", "John Quincy
        /// Adams").
        FullerName = "fuller_name",
        /// One name in the singular and in the plural, of one type that is not a person
        /// ("Academy Award", "Academy Awards"; "Himalaya", "Himalayas").
        Plural = "plural",
        /// In one document, a name (not a person's) that begins or ends a longer name
        /// ("Acropolis", "Acropolis of Athens"; but also "Jordan", "Jordan River").
        PartialName = "partial_name",
    }
}

/// One mention of a resolved entity, as [`undecided`] reads it.
#[derive(Debug, Clone, Copy)]
pub struct Resolved<'a> {
    /// The entity it resolved to (any id that is the same for the entity's mentions).
    pub entity: i64,
    /// The document it is in (any key that is the same for one document's mentions).
    pub document: &'a str,
    pub text: &'a str,
    pub entity_type: EntityType,
}

/// Pairs of entities (`(a, b, why, the mention of a, the mention of b)`, `a < b`, the
/// mentions as indices into `mentions`) that the names suggest are one thing and that no
/// rule joined: what waits for a person. Each pair is given once, under the first reason
/// found; an entity's own mentions never pair.
pub fn undecided(mentions: &[Resolved<'_>]) -> Vec<(i64, i64, Undecided, usize, usize)> {
    // The first mention of each name and type, per entity.
    let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, m) in mentions.iter().enumerate() {
        let key = name_key(m.text);
        if key.is_empty() {
            continue;
        }
        let list = by_key.entry(key).or_default();
        if !list
            .iter()
            .any(|&j| mentions[j].entity == m.entity && mentions[j].entity_type == m.entity_type)
        {
            list.push(i);
        }
    }
    let mut keys: Vec<&String> = by_key.keys().collect();
    keys.sort();
    // Each listed mention's name, as the words of its key, read once.
    let mut words_of: Vec<Vec<&str>> = vec![Vec::new(); mentions.len()];
    for (key, list) in &by_key {
        for &i in list {
            words_of[i] = key.split(' ').collect();
        }
    }
    let mut found = Vec::new();
    for key in &keys {
        let list = &by_key[*key];
        for (p, &i) in list.iter().enumerate() {
            for &j in &list[p + 1..] {
                found.push((
                    i,
                    j,
                    if mentions[i].entity_type == mentions[j].entity_type {
                        Undecided::DescribedApart
                    } else {
                        Undecided::OtherType
                    },
                ));
            }
        }
    }
    people_pairs(mentions, &by_key, &keys, &words_of, &mut found);
    // The same name in the singular and the plural, of one type other than a person's
    // ("Andrew" is no plural of "Andrews").
    for key in &keys {
        for plural in [format!("{key}s"), format!("{key}es")] {
            for &i in &by_key[*key] {
                for &j in by_key.get(&plural).into_iter().flatten() {
                    let (a, b) = (&mentions[i], &mentions[j]);
                    if a.entity_type == b.entity_type && a.entity_type != EntityType::Person {
                        found.push((i, j, Undecided::Plural));
                    }
                }
            }
        }
    }
    partial_names(mentions, &by_key, &keys, &words_of, &mut found);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, j, why) in found {
        let (a, b) = (mentions[i].entity, mentions[j].entity);
        if a == b {
            continue;
        }
        let (i, j) = if a < b { (i, j) } else { (j, i) };
        let key = (mentions[i].entity, mentions[j].entity);
        if seen.insert(key) {
            out.push((key.0, key.1, why, i, j));
        }
    }
    out
}

/// People's names: a fuller form of a name, then a surname against a full name ending in
/// it. The fuller name comes first so that a pair is shown with the names that say most
/// ("Woodrow Wilson" and "Thomas Woodrow Wilson", not "Wilson").
fn people_pairs(
    mentions: &[Resolved<'_>],
    by_key: &HashMap<String, Vec<usize>>,
    keys: &[&String],
    words_of: &[Vec<&str>],
    found: &mut Vec<(usize, usize, Undecided)>,
) {
    let mut full_by_last: HashMap<&str, Vec<usize>> = HashMap::new();
    // The one-word names an entity's own full names explain: "Johnson" of an entity that
    // holds "Lyndon B. Johnson" is that man, not another Johnson.
    let mut own_full: std::collections::HashSet<(i64, &str)> = std::collections::HashSet::new();
    for key in keys {
        for &i in &by_key[*key] {
            if mentions[i].entity_type == EntityType::Person
                && let Some((first, last)) = key.rsplit_once(' ')
            {
                full_by_last.entry(last).or_default().push(i);
                own_full.insert((mentions[i].entity, last));
                own_full.insert((mentions[i].entity, first.split(' ').next().unwrap_or(first)));
            }
        }
    }
    for surname in [false, true] {
        for key in keys {
            for &i in &by_key[*key] {
                let words = &words_of[i];
                if (words.len() == 1) != surname {
                    continue;
                }
                if mentions[i].entity_type != EntityType::Person {
                    continue;
                }
                for &j in full_by_last
                    .get(words[words.len() - 1])
                    .into_iter()
                    .flatten()
                {
                    let other = &words_of[j];
                    if surname {
                        if !own_full.contains(&(mentions[i].entity, words[0])) {
                            found.push((i, j, Undecided::Surname));
                        }
                    } else if other.len() > words.len() && in_order(words, other) {
                        found.push((i, j, Undecided::FullerName));
                    }
                }
            }
        }
    }
}

/// In one document, a name that begins or ends a longer one, neither a person's (a
/// person's short forms are `short_name`'s and `fuller_name`'s).
fn partial_names(
    mentions: &[Resolved<'_>],
    by_key: &HashMap<String, Vec<usize>>,
    keys: &[&String],
    words_of: &[Vec<&str>],
    found: &mut Vec<(usize, usize, Undecided)>,
) {
    let mut by_document: HashMap<&str, Vec<usize>> = HashMap::new();
    for key in keys {
        for &i in &by_key[*key] {
            if mentions[i].entity_type != EntityType::Person {
                by_document.entry(mentions[i].document).or_default().push(i);
            }
        }
    }
    let mut documents: Vec<&&str> = by_document.keys().collect();
    documents.sort();
    for document in documents {
        let list = &by_document[*document];
        for &i in list {
            let short = &words_of[i];
            for &j in list {
                let long = &words_of[j];
                if long.len() > short.len() && (long.starts_with(short) || long.ends_with(short)) {
                    found.push((i, j, Undecided::PartialName));
                }
            }
        }
    }
}

/// Whether every word of `short` occurs in `long`, in order.
fn in_order(short: &[&str], long: &[&str]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|w| rest.any(|l| l == w))
}

/// The cluster of each mention (the smallest index in it) once `joins` are applied.
pub fn clusters(n: usize, joins: &[Join]) -> Vec<usize> {
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for j in joins {
        let (a, b) = (root(&mut parent, j.a), root(&mut parent, j.b));
        if a != b {
            parent[a.max(b)] = a.min(b);
        }
    }
    (0..n).map(|i| root(&mut parent, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m<'a>(document: &'a str, text: &'a str, start: usize, t: EntityType) -> Mention<'a> {
        Mention {
            document,
            title: None,
            text,
            start,
            entity_type: t,
        }
    }

    #[test]
    fn same_name_keeps_apart_what_the_documents_describe_as_two_things() {
        use EntityType::{Location, Other, Person};
        let texts: HashMap<&str, &str> = HashMap::from([
            ("georgia", "Georgia is a country in the Caucasus."),
            (
                "atlanta",
                "Atlanta is the capital of the U.S. state of Georgia. Fulton County and \
                 Decatur are near.",
            ),
            ("florida", "Florida borders Georgia to the north."),
            (
                "macon",
                "Macon lies in Georgia, between Decatur and Fulton County.",
            ),
            ("vinson", "He was a congressman from the state of Georgia."),
            ("bp", "Blood pressure (BP) is the pressure of blood."),
            ("clovis", "It dates to 13,050 years Before Present (BP)."),
            ("mesolithic", "It spans 15,000 to 5,000 BP."),
            ("fdr", "Franklin D. Roosevelt was president. Roosevelt won."),
            (
                "deal",
                "Franklin Delano Roosevelt began it. Roosevelt spoke.",
            ),
            ("tr", "Theodore Roosevelt hunted. Roosevelt wrote."),
            ("jin-1", "The Jin dynasty was an imperial dynasty."),
            ("jin-2", "The Jin dynasty was a Jurchen-led dynasty."),
        ]);
        let at = |doc: &str, name: &str| texts[doc].rfind(name).unwrap();
        let mention =
            |document: &'static str, title: &'static str, text: &'static str, t| Mention {
                document,
                title: Some(title),
                text,
                start: at(document, text),
                entity_type: t,
            };
        let ms = [
            mention("georgia", "Georgia (country)", "Georgia", Location),
            mention("atlanta", "Atlanta", "Georgia", Location),
            mention("florida", "Florida", "Georgia", Location),
            mention("vinson", "Vinson Massif", "Georgia", Location),
            mention("bp", "Blood pressure", "Blood pressure", Other),
            mention("bp", "Blood pressure", "BP", Other),
            mention("clovis", "Clovis culture", "Before Present", Other),
            mention("clovis", "Clovis culture", "BP", Other),
            mention("mesolithic", "Mesolithic", "BP", Other),
            mention(
                "fdr",
                "Franklin D. Roosevelt",
                "Franklin D. Roosevelt",
                Person,
            ),
            mention("fdr", "Franklin D. Roosevelt", "Roosevelt", Person),
            mention("deal", "New Deal", "Franklin Delano Roosevelt", Person),
            mention("deal", "New Deal", "Roosevelt", Person),
            mention("tr", "Theodore Roosevelt", "Roosevelt", Person),
            mention("jin-1", "Jin dynasty (266–420)", "Jin dynasty", Other),
            mention("jin-2", "Jin dynasty (1115–1234)", "Jin dynasty", Other),
            mention("macon", "Macon", "Georgia", Location),
        ];
        let r = resolve(&ms, |d| texts.get(d).copied(), &HashMap::new());
        let c = clusters(ms.len(), &r.joins);
        let one = |a: usize, b: usize| c[a] == c[b];
        // A country and a state. A list that says nothing joins neither; a document that
        // shares two names with the state's joins it.
        assert!(!one(0, 1) && one(1, 3) && !one(0, 2) && !one(1, 2));
        assert!(one(1, 16) && !one(0, 16));
        assert_eq!(r.described[1].kind.as_deref(), Some("state"));
        // An acronym the text spells out two ways, each a definition; unexpanded, it
        // joins neither.
        assert!(!one(5, 7) && !one(5, 8) && !one(7, 8));
        assert_eq!(r.described[7].longer.as_deref(), Some("before present"));
        // One man's surname, with his full name written two ways; another man's, by
        // his title.
        assert!(one(10, 12) && !one(10, 13));
        assert_eq!(
            r.described[13].longer.as_deref(),
            Some("theodore roosevelt")
        );
        // Two titles that qualify one name.
        assert!(!one(14, 15));
        let apart: Vec<(usize, usize, Apart)> = r.kept_apart.clone();
        assert_eq!(
            apart,
            vec![
                (1, 0, Apart::Kind),
                (3, 0, Apart::Kind),
                (7, 5, Apart::LongerName),
                (13, 10, Apart::LongerName),
                (15, 14, Apart::Title),
                (2, 0, Apart::Unsaid),
                (8, 5, Apart::Unsaid),
            ]
        );
        // A mention whose document is not read takes what is known of its entity.
        let known = HashMap::from([(2, r.described[1].clone())]);
        let alone = resolve(&ms[..3], |d| texts.get(d).copied(), &known);
        assert!(alone.joins.iter().all(|j| (j.a, j.b) != (0, 2)));
        assert!(alone.joins.iter().any(|j| (j.a, j.b) == (1, 2)));
    }

    #[test]
    fn a_name_with_its_kind_after_it_joins_the_one_thing_of_that_kind() {
        use EntityType::Location;
        let texts: HashMap<&str, &str> = HashMap::from([
            (
                "swamp",
                "Swamps lie along rivers such as the Amazon and the Congo.",
            ),
            (
                "nile",
                "It carries less water than rivers such as the Amazon.",
            ),
            ("belem", "Belém is near the mouth of the Amazon River."),
            ("forest", "The Amazon is a moist tropical rainforest."),
            ("delta", "The Congo River delta is wide."),
        ]);
        let mention = |document: &'static str, text: &'static str| Mention {
            document,
            title: None,
            text,
            start: texts[document].find(text).unwrap(),
            entity_type: Location,
        };
        let ms = [
            mention("swamp", "the Amazon"),
            mention("nile", "the Amazon"),
            mention("belem", "Amazon River"),
            mention("forest", "The Amazon"),
            mention("swamp", "the Congo"),
            mention("delta", "Congo River"),
        ];
        let r = resolve(&ms, |d| texts.get(d).copied(), &HashMap::new());
        let c = clusters(ms.len(), &r.joins);
        // Two documents call "the Amazon" a river: "Amazon River" is that river, not the
        // rainforest a third calls it.
        assert!(c[0] == c[1] && c[1] == c[2] && c[3] != c[0]);
        assert!(
            r.joins
                .iter()
                .any(|j| j.rule == JoinRule::KindName && (j.a, j.b) == (0, 2))
        );
        // One document's reading establishes nothing: "Congo River" joins no "Congo".
        assert_ne!(c[4], c[5]);
        assert_eq!(kind_name_head("amazon river"), Some("amazon"));
        assert_eq!(kind_name_head("amazon rivers"), None);
        assert!(kind_name_keys("amazon").contains(&"amazon river".to_owned()));
    }

    #[test]
    fn two_years_or_a_mention_its_own_sentence_calls_another_kind_keep_things_apart() {
        use EntityType::{Location, Work};
        let texts: HashMap<&str, &str> = HashMap::from([
            (
                "berlin",
                "It kept the principles of the 1856 Treaty of Paris.",
            ),
            ("war", "It came under the December 1898 Treaty of Paris."),
            (
                "state",
                "São Paulo is a state. Its capital is the municipality of São Paulo.",
            ),
            ("city", "São Paulo is the capital city of the state."),
            ("brazil", "Its most populous city is São Paulo."),
        ]);
        let mention = |document: &'static str, title: &'static str, at: usize, text, t| Mention {
            document,
            title: Some(title),
            text,
            start: at,
            entity_type: t,
        };
        let second = texts["state"].rfind("São Paulo").unwrap();
        let ms = [
            mention(
                "berlin",
                "Congress of Berlin",
                texts["berlin"].find("Treaty").unwrap(),
                "Treaty of Paris",
                Work,
            ),
            mention(
                "war",
                "Philippine–American War",
                texts["war"].find("Treaty").unwrap(),
                "Treaty of Paris",
                Work,
            ),
            mention("state", "São Paulo (state)", 0, "São Paulo", Location),
            mention("state", "São Paulo (state)", second, "São Paulo", Location),
            mention("city", "São Paulo", 0, "São Paulo", Location),
            mention(
                "brazil",
                "Brazil",
                texts["brazil"].find("São").unwrap(),
                "São Paulo",
                Location,
            ),
        ];
        let r = resolve(&ms, |d| texts.get(d).copied(), &HashMap::new());
        let c = clusters(ms.len(), &r.joins);
        assert_ne!(c[0], c[1]);
        assert_eq!(r.described[0].year.as_deref(), Some("1856"));
        assert!(r.kept_apart.contains(&(1, 0, Apart::Year)));
        // The state's summary names the city too: that mention is the city's.
        assert_eq!(r.described[2].kind.as_deref(), Some("state"));
        assert_eq!(r.described[3].kind.as_deref(), Some("city"));
        assert_eq!(r.described[3].title, None);
        assert!(c[3] == c[4] && c[4] == c[5] && c[2] != c[4]);
    }

    #[test]
    fn dated_things_makers_and_spans_of_years_keep_one_name_apart() {
        use EntityType::{Other, Person, Work};
        let texts: HashMap<&str, &str> = HashMap::from([
            (
                "war",
                "The war ended. In 1783, in the Treaty of Paris, Britain agreed.",
            ),
            (
                "us",
                "On September 3, 1783, in the Treaty of Paris, Britain agreed.",
            ),
            ("berlin", "It kept the 1856 Treaty of Paris."),
            (
                "ph-war",
                "Spain ceded the Philippines in the December 1898 Treaty of Paris.",
            ),
            (
                "ph",
                "The Philippines rebelled against Spain. Spain sold the Philippines to the \
                 United States in the Treaty of Paris.",
            ),
            ("david", "David is a statue by Michelangelo."),
            (
                "donatello",
                "Donatello was a sculptor. His David was bronze.",
            ),
            ("jin", "The Jin dynasty ruled China."),
            ("jurchen", "The Jin dynasty was a Jurchen empire."),
            (
                "kingdoms",
                "Order under the Jin dynasty (266–420) in the north ended.",
            ),
        ]);
        let m = |document: &'static str, title: &'static str, text: &'static str, t| Mention {
            document,
            title: Some(title),
            text,
            start: texts[document].find(text).unwrap(),
            entity_type: t,
        };
        let ms = [
            m("war", "American Revolutionary War", "Treaty of Paris", Work),
            m(
                "us",
                "History of the United States",
                "Treaty of Paris",
                Work,
            ),
            m("berlin", "Congress of Berlin", "Treaty of Paris", Work),
            m("ph-war", "Philippine–American War", "Treaty of Paris", Work),
            m("ph", "Philippine Revolution", "Treaty of Paris", Work),
            m("david", "David (Michelangelo)", "David", Work),
            m("donatello", "Donatello", "Donatello", Person),
            m("donatello", "Donatello", "David", Work),
            m("jin", "Jin dynasty (266–420)", "Jin dynasty", Other),
            m("jurchen", "Jin dynasty (1115–1234)", "Jin dynasty", Other),
            m("kingdoms", "Sixteen Kingdoms", "Jin dynasty", Other),
        ];
        let r = resolve(&ms, |d| texts.get(d).copied(), &HashMap::new());
        let c = clusters(ms.len(), &r.joins);
        let years: Vec<Option<&str>> = r.described.iter().map(|d| d.year.as_deref()).collect();
        assert_eq!(
            years,
            [
                Some("1783"),
                Some("1783"),
                Some("1856"),
                Some("1898"),
                None,
                None,
                None,
                None,
                Some("266"),
                Some("1115"),
                Some("266"),
            ]
        );
        // Two summaries establish the 1783 treaty; the undated one is one of three dated
        // things, and it names the Philippines as the 1898 one's summary does.
        assert_eq!(c[0], c[1]);
        assert!(c[2] != c[0] && c[3] != c[0] && c[2] != c[3]);
        assert_eq!(c[4], c[3]);
        // Michelangelo's statue and Donatello's.
        assert_eq!(r.described[5].maker.as_deref(), Some("michelangelo"));
        assert_eq!(r.described[7].maker.as_deref(), Some("donatello"));
        assert_ne!(c[5], c[7]);
        assert!(r.kept_apart.contains(&(7, 5, Apart::Maker)));
        // A span of years after a name places it with the title qualified so.
        assert_eq!(c[10], c[8]);
        assert_ne!(c[8], c[9]);
    }

    #[test]
    fn the_title_leading_its_text_takes_an_or_after_a_comma_and_nothing_else_does() {
        let d = "World War II, or the Second World War, was a conflict. \
                 It drew in France, Spain, or Italy.";
        let at = |name: &str| d.find(name).unwrap();
        let mention = |text: &'static str, t| Mention {
            document: "d",
            title: Some("World War II"),
            text,
            start: at(text),
            entity_type: t,
        };
        let ms = [
            mention("World War II", EntityType::Event),
            mention("Second World War", EntityType::Event),
            mention("Spain", EntityType::Location),
            mention("Italy", EntityType::Location),
        ];
        let js = joins(&ms, |_| Some(d));
        assert_eq!(js.len(), 1, "{js:?}");
        assert_eq!(
            (js[0].a, js[0].b, js[0].rule),
            (0, 1, JoinRule::AliasInText)
        );
        // Not the title, or not where the text opens: a list's last item.
        let other = [
            Mention {
                title: Some("Europe"),
                ..ms[0]
            },
            ms[1],
        ];
        assert!(joins(&other, |_| Some(d)).is_empty());
    }

    #[test]
    fn an_acronym_spelt_out_letter_for_letter_is_a_definition() {
        assert!(spelt_out("BP", "blood pressure"));
        assert!(spelt_out("AD", "age of discovery"));
        assert!(spelt_out("the BBC's", "british broadcasting corporation"));
        assert!(!spelt_out("UK", "palaeography"));
        assert!(!spelt_out("Europe", "european union"));
        assert!(!spelt_out("BP", "before present era"));
    }

    #[test]
    fn a_mention_that_says_nothing_joins_one_of_two_things_only_on_evidence() {
        let texts: HashMap<&str, &str> = HashMap::from([
            (
                "wf1",
                "The Western Front was a theatre of the war in France.",
            ),
            ("wf2", "The Western Front was a theatre of the later war."),
            ("italy", "The front soon resembled the Western Front."),
            ("foch", "Foch commanded on the Western Front."),
            ("trench", "Trenches lined the Western Front."),
        ]);
        let mention = |document: &'static str, title: &'static str| Mention {
            document,
            title: Some(title),
            text: "Western Front",
            start: texts[document].find("Western Front").unwrap(),
            entity_type: EntityType::Event,
        };
        let ms = [
            mention("wf1", "Western Front (World War I)"),
            mention("wf2", "Western Front (World War II)"),
            mention("italy", "Italian front (World War I)"),
            mention("foch", "Ferdinand Foch"),
            mention("trench", "Trench warfare"),
        ];
        let r = resolve(&ms, |d| texts.get(d).copied(), &HashMap::new());
        let c = clusters(ms.len(), &r.joins);
        // Two things by their titles; a title qualified as one of them joins it; the
        // documents that share no names with either join neither, but each other.
        assert!(c[0] != c[1] && c[2] == c[0] && c[3] != c[0] && c[3] != c[1]);
        assert_eq!(c[4], c[3]);
        assert_eq!(
            r.kept_apart,
            vec![
                (1, 0, Apart::Title),
                (3, 0, Apart::Unsaid),
                (4, 0, Apart::Unsaid)
            ]
        );
    }

    #[test]
    fn what_no_rule_decides_is_put_before_a_person() {
        use EntityType::{Concept, Event, Location, Other, Person, Work};
        let r = |entity, document, text, entity_type| Resolved {
            entity,
            document,
            text,
            entity_type,
        };
        let ms = [
            r(2, "faust-play", "Faust", Work),
            r(1, "faust-legend", "Faust", Person),
            r(3, "clarke", "Arthur C. Clarke", Person),
            r(4, "sentinel", "Clarke's", Person),
            // One entity: never a pair with itself.
            r(5, "atlanta", "Georgia", Location),
            r(5, "florida", "the Georgia", Location),
            // A place is no surname, and an event's name no person's; in two documents,
            // no partial name either.
            r(6, "louvre", "Paris", Location),
            r(7, "revolution", "Treaty of Paris", Event),
            // Same name and type, kept apart by what their documents say (or by a
            // person: the store drops the pairs a person separated).
            r(8, "lovelace", "Ada Lovelace", Person),
            r(9, "engine", "Ada Lovelace", Person),
            r(10, "wilson", "Thomas Woodrow Wilson", Person),
            r(11, "addams", "Woodrow Wilson", Person),
            // Not in order, or another surname: no pair.
            r(12, "addams", "Wilson Woodrow", Person),
            r(13, "addams", "Woodrow Guthrie", Person),
            r(14, "oscars", "Academy Awards", Work),
            r(15, "berlin", "Academy Award", Work),
            // A person's name is no plural; nor is another type's.
            r(16, "andrews", "Andrew", Person),
            r(17, "andrews", "Andrews", Person),
            r(18, "himalaya", "Himalaya", Location),
            r(19, "himalaya", "Himalayas", Concept),
            // The start or the end of a longer name in one document, whatever the types:
            // one thing ("Acropolis") or two ("Athens") for a person to say; never part
            // of a word.
            r(20, "acropolis", "Acropolis", Other),
            r(21, "acropolis", "The Acropolis of Athens", Location),
            r(22, "acropolis", "Athens", Location),
            r(23, "acropolis", "Acro", Other),
            // A surname its own entity's full name explains is that person's: no pair
            // with another of the name.
            r(24, "lbj", "Lyndon B. Johnson", Person),
            r(24, "lbj", "Johnson", Person),
            r(25, "andrew", "Andrew Johnson", Person),
        ];
        let got: Vec<(i64, i64, Undecided, &str, &str)> = undecided(&ms)
            .into_iter()
            .map(|(a, b, why, i, j)| (a, b, why, ms[i].text, ms[j].text))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    8,
                    9,
                    Undecided::DescribedApart,
                    "Ada Lovelace",
                    "Ada Lovelace"
                ),
                (1, 2, Undecided::OtherType, "Faust", "Faust"),
                (
                    10,
                    11,
                    Undecided::FullerName,
                    "Thomas Woodrow Wilson",
                    "Woodrow Wilson"
                ),
                (3, 4, Undecided::Surname, "Arthur C. Clarke", "Clarke's"),
                (14, 15, Undecided::Plural, "Academy Awards", "Academy Award"),
                (
                    20,
                    21,
                    Undecided::PartialName,
                    "Acropolis",
                    "The Acropolis of Athens"
                ),
                (
                    21,
                    22,
                    Undecided::PartialName,
                    "The Acropolis of Athens",
                    "Athens"
                ),
            ]
        );
    }

    #[test]
    fn names_are_keyed_without_case_article_or_possessive() {
        assert_eq!(name_key("The Acropolis"), name_key("acropolis"));
        assert_eq!(name_key("Seurat's"), "seurat");
        assert_eq!(name_key("Ame\u{301}lie"), name_key("Amélie"));
        assert_ne!(name_key("Seurat"), name_key("Georges Seurat"));
        assert_ne!(name_key("A Christmas Carol"), name_key("Christmas carol"));
        assert_eq!(name_key("Washington, D.C."), name_key("Washington, DC"));
        assert_eq!(name_key("St. Louis"), name_key("St Louis"));
        assert_eq!(name_key("J.R.R. Tolkien"), "jrr tolkien");
        assert_eq!(name_key("Amazon.com, Inc."), "amazon.com, inc");
    }

    #[test]
    fn an_alias_written_after_the_is_given_by_the_text() {
        // As a model names them: without the article the text puts before the alias.
        let d = "The Academy Awards, more commonly known as the Oscars, are awards.";
        let ms = [
            m("d", "Academy Awards", 4, EntityType::Work),
            m("d", "Oscars", d.find("Oscars").unwrap(), EntityType::Work),
        ];
        let js = joins(&ms, |_| Some(d));
        assert_eq!(js.len(), 1, "{js:?}");
        assert_eq!(js[0].rule, JoinRule::AliasInText);
        let (s, e) = js[0].evidence.unwrap();
        assert_eq!(
            &d[s..e],
            "Academy Awards, more commonly known as the Oscars"
        );
        // "the" is the only word allowed there.
        let d = "The Academy Awards, more commonly known as a Oscars, are awards.";
        assert!(joins(&ms, |_| Some(d)).is_empty());
    }

    #[test]
    fn aliases_are_read_from_the_text_in_either_order() {
        let d = "The Academy Awards, more commonly known as the Oscars, are awards. \
                 The book (Al-Jabr) was written. Paris or Lutetia.";
        assert!(aliases_in(d, "Academy Awards", "Oscars"));
        assert!(aliases_in(d, "Oscars", "Academy Awards"));
        assert!(aliases_in(d, "The book", "Al-Jabr"));
        assert!(aliases_in(d, "Paris", "Lutetia"));
        let d = "The chimpanzee, commonly abbreviated to chimp, is an ape. \
                 Pharmacokinetics, sometimes abbreviated as PK, is a branch. \
                 The axiom of choice, abbreviated AC, is an axiom.";
        assert!(aliases_in(d, "chimpanzee", "chimp"));
        assert!(aliases_in(d, "Pharmacokinetics", "PK"));
        assert!(aliases_in(d, "axiom of choice", "AC"));
        assert!(!aliases_in(d, "chimpanzee", "ape"));
        let n = "Siddhartha Gautama, most commonly referred to as the Buddha, taught. \
                 Tenzing Norgay, born Namgyal Wangdi, climbed. The District of Columbia \
                 and commonly known as Washington. Sandro Botticelli or simply Botticelli. \
                 The Tragedy of Macbeth, often shortened to Macbeth. Michael Jordan, also \
                 known by his initials MJ. Humphrey Bogart, nicknamed Bogie. Jesus called \
                 Peter. Rome, known for Caesar. Ada, born in London.";
        assert!(aliases_in(n, "Siddhartha Gautama", "Buddha"));
        assert!(aliases_in(n, "Tenzing Norgay", "Namgyal Wangdi"));
        assert!(aliases_in(n, "District of Columbia", "Washington"));
        assert!(aliases_in(n, "Sandro Botticelli", "Botticelli"));
        assert!(aliases_in(n, "The Tragedy of Macbeth", "Macbeth"));
        assert!(aliases_in(n, "Michael Jordan", "MJ"));
        assert!(aliases_in(n, "Humphrey Bogart", "Bogie"));
        // A verb after no comma, or another phrase, names no one twice.
        assert!(!aliases_in(n, "Jesus", "Peter"));
        assert!(!aliases_in(n, "Rome", "Caesar"));
        assert!(!aliases_in(n, "Ada", "London"));
        // The same links join two stored mentions, with the bytes as evidence.
        let ms = [
            m("d", "chimpanzee", 4, EntityType::Concept),
            m("d", "chimp", d.find("chimp,").unwrap(), EntityType::Concept),
        ];
        let js = joins(&ms, |_| Some(d));
        assert_eq!(js.len(), 1, "{js:?}");
        assert_eq!(js[0].rule, JoinRule::AliasInText);
        let (s, e) = js[0].evidence.unwrap();
        assert_eq!(&d[s..e], "chimpanzee, commonly abbreviated to chimp");
        assert!(
            !aliases_in(d, "Academy Awards", "Oscar"),
            "a whole name only"
        );
        assert!(!aliases_in(d, "Oscars", "Al-Jabr"), "no link between them");
        assert!(!aliases_in(d, "", "Oscars"));
    }

    #[test]
    fn each_rule_joins_its_case_and_no_rule_joins_across_types() {
        let d1 = "The Academy Awards, more commonly known as the Oscars, are awards. \
                  The Academy of Motion Picture Arts and Sciences (AMPAS) presents them.";
        let oscars = d1.find("the Oscars").unwrap();
        let ampas_full = d1.find("Academy of Motion").unwrap();
        let d2 = "Georges Seurat painted it. Seurat died young. Georgia is a country.";
        let d3 = "Georgia sang. The Oscars were given.";
        let ms = [
            m("d1", "The Academy Awards", 0, EntityType::Other),
            m("d1", "the Oscars", oscars, EntityType::Other),
            m(
                "d1",
                "Academy of Motion Picture Arts and Sciences",
                ampas_full,
                EntityType::Organization,
            ),
            m(
                "d1",
                "AMPAS",
                d1.find("AMPAS").unwrap(),
                EntityType::Organization,
            ),
            m("d2", "Georges Seurat", 0, EntityType::Person),
            m(
                "d2",
                "Seurat",
                d2.find("Seurat died").unwrap(),
                EntityType::Person,
            ),
            m(
                "d2",
                "Georgia",
                d2.find("Georgia").unwrap(),
                EntityType::Location,
            ),
            m("d3", "Georgia", 0, EntityType::Person),
            m(
                "d3",
                "The Oscars",
                d3.find("The Oscars").unwrap(),
                EntityType::Other,
            ),
        ];
        let text = |d: &str| match d {
            "d1" => Some(d1),
            "d2" => Some(d2),
            _ => Some(d3),
        };
        let js = joins(&ms, text);
        let has = |a: usize, b: usize, rule: JoinRule| {
            js.iter().any(|j| j.a == a && j.b == b && j.rule == rule)
        };
        assert!(has(0, 1, JoinRule::AliasInText), "{js:?}");
        assert_eq!(
            js.iter()
                .find(|j| j.rule == JoinRule::AliasInText)
                .unwrap()
                .evidence,
            Some((0, oscars + "the Oscars".len()))
        );
        // "X (Y)" is the text giving the acronym: the alias rule, with its evidence.
        assert!(has(2, 3, JoinRule::AliasInText), "{js:?}");
        assert!(has(4, 5, JoinRule::ShortName), "{js:?}");
        assert!(has(1, 8, JoinRule::SameName), "{js:?}");
        let c = clusters(ms.len(), &js);
        assert_eq!(c[8], c[0], "the Oscars of d3 are d1's Academy Awards");
        assert_ne!(c[6], c[7], "Georgia the country is not Georgia the singer");
        assert_ne!(c[0], c[2], "the awards are not the academy");
    }
}
