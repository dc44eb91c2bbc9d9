//! The shape of a statement: its opening noun phrase and whether it has a main clause.
//!
//! Three checks read a statement (or a source sentence) the same way, so the reading is
//! written once, here:
//!
//! - `standalone`: a stored claim is read alone (export, answers, the review page,
//!   relations), so its grammatical subject must not be a pronoun ("It reached its
//!   apogee"), a demonstrative or possessive phrase without a name ("This method", "Its
//!   plot") or a definite noun phrase without a name ("The film stars …", "The term was
//!   first applied …"), and it must have a main clause (not "Although acrobatics is …",
//!   not "Directed by Stanley Kubrick.", not a list of nouns).
//! - `subject_topic`: the claim's subject must be named in that opening noun phrase — what
//!   the statement is about, not a word that occurs in it.
//! - support with context: a source sentence whose opening phrase refers back (a pronoun, a
//!   demonstrative, a definite noun phrase without a name) may be read with the names of
//!   the sentence before it.
//!
//! # How a statement is read
//!
//! Words are runs of letters and digits (an inner apostrophe or hyphen kept); commas are
//! kept as separators. An introductory phrase is skipped up to its comma: a subordinate
//! clause ("Although …,", "When …,"), a participle ("Directed by …,", "Born in …,") or a
//! prepositional phrase ("In 1968,", "In archaeology,"); with no comma after it there is
//! no main clause. An opening phrase other than a subordinate clause whose words before
//! the comma hold a copula or auxiliary is not skipped: it was the subject ("On the Road
//! is …", "During ancient times the Acropolis was …, after …"). The **finite verb** is
//! the first word that is an auxiliary or copula (`is`, `was`, `has`, `can`, …), an
//! irregular past form (`became`, `won`, `wrote`, …),
//! a verb of the lexicon below in its base, `-s` or `-ed` form, or another lowercase word
//! in `-ed` that follows no determiner or preposition ("opened", not "the painted
//! ceiling"). A non-restrictive relative clause (", which …,", ", who …,") is skipped. The
//! **opening noun phrase** is everything before the finite verb; its **head** is the part
//! before its first comma or relative pronoun, and that is what is classified.
//!
//! It is a reading with word lists, not a parser: a verb missing from the lexicon in its
//! present tense ("The film grosses …") is not seen, so a statement whose only verb is
//! such a word reads as having no main clause; the labelled set
//! (`tests/gate/knowledge.json`) measures what this costs, and BENCHMARKS.md has the
//! figures.

/// Copulas, auxiliaries and modals: a finite verb wherever they stand.
const AUXILIARIES: &[&str] = &[
    "is",
    "are",
    "was",
    "were",
    "am",
    "has",
    "have",
    "had",
    "does",
    "do",
    "did",
    "can",
    "could",
    "will",
    "would",
    "shall",
    "should",
    "may",
    "might",
    "must",
    "isn't",
    "aren't",
    "wasn't",
    "weren't",
    "hasn't",
    "haven't",
    "hadn't",
    "doesn't",
    "don't",
    "didn't",
    "can't",
    "cannot",
    "couldn't",
    "won't",
    "wouldn't",
    "shouldn't",
    "it's",
    "he's",
    "she's",
    "they're",
    "remains",
    "remained",
    "became",
    "becomes",
    "become",
    "seems",
    "seemed",
];

/// Irregular past forms (a finite verb).
const IRREGULAR_PAST: &[&str] = &[
    "arose",
    "awoke",
    "bore",
    "beat",
    "began",
    "bent",
    "bet",
    "bit",
    "bled",
    "blew",
    "broke",
    "bred",
    "brought",
    "built",
    "burnt",
    "burst",
    "bought",
    "caught",
    "chose",
    "clung",
    "came",
    "cost",
    "crept",
    "cut",
    "dealt",
    "dug",
    "dove",
    "drew",
    "dreamt",
    "drank",
    "drove",
    "ate",
    "fell",
    "fed",
    "felt",
    "fought",
    "found",
    "fled",
    "flung",
    "flew",
    "forbade",
    "forgot",
    "forgave",
    "froze",
    "got",
    "gave",
    "went",
    "ground",
    "grew",
    "hung",
    "heard",
    "hid",
    "hit",
    "held",
    "hurt",
    "kept",
    "knelt",
    "knew",
    "laid",
    "led",
    "leapt",
    "learnt",
    "left",
    "lent",
    "let",
    "lay",
    "lit",
    "lost",
    "made",
    "meant",
    "met",
    "paid",
    "put",
    "quit",
    "read",
    "rode",
    "rang",
    "rose",
    "ran",
    "said",
    "saw",
    "sought",
    "sold",
    "sent",
    "set",
    "shook",
    "shone",
    "shot",
    "showed",
    "shrank",
    "shut",
    "sang",
    "sank",
    "sat",
    "slept",
    "slid",
    "slung",
    "spoke",
    "sped",
    "spent",
    "spun",
    "spread",
    "sprang",
    "stood",
    "stole",
    "stuck",
    "stung",
    "struck",
    "strove",
    "swore",
    "swept",
    "swam",
    "swung",
    "took",
    "taught",
    "tore",
    "told",
    "thought",
    "threw",
    "thrust",
    "trod",
    "understood",
    "undertook",
    "underwent",
    "upset",
    "woke",
    "wore",
    "wove",
    "wept",
    "won",
    "wound",
    "wrote",
    "withdrew",
    "overcame",
    "overthrew",
    "oversaw",
    "foresaw",
    "mistook",
    "outgrew",
    "rebuilt",
    "retold",
    "rewrote",
    "bid",
    "forecast",
    "wed",
];

/// Verbs of encyclopedic prose, in their base form; their `-s`, `-es`, `-ies` and `-ed`
/// forms are finite verbs too. A base form alone is finite after a plural subject
/// ("Electrons carry …"), so it counts only outside the opening determiner. Mined from
/// the words the real corpus (10,000 Wikipedia summaries) writes after "to", "can",
/// "will", "may", "does" and the like, with nouns and adjectives taken out by hand.
const VERBS: &[&str] = &[
    "flood",
    "review",
    "disprove",
    "hasten",
    "delay",
    "seduce",
    "marry",
    "rebel",
    "reign",
    "abdicate",
    "abolish",
    "absorb",
    "accelerate",
    "accept",
    "access",
    "accommodate",
    "accomplish",
    "account",
    "accumulate",
    "achieve",
    "acquire",
    "act",
    "adapt",
    "add",
    "address",
    "adhere",
    "adjudicate",
    "adjust",
    "administer",
    "adopt",
    "advance",
    "advocate",
    "affect",
    "age",
    "agree",
    "aid",
    "aim",
    "align",
    "allow",
    "alter",
    "amplify",
    "analyse",
    "analyze",
    "annex",
    "answer",
    "appear",
    "apply",
    "appoint",
    "approximate",
    "argue",
    "arise",
    "arrest",
    "arrive",
    "articulate",
    "ascend",
    "ask",
    "assess",
    "assign",
    "assist",
    "associate",
    "assume",
    "attack",
    "attain",
    "attempt",
    "attend",
    "attract",
    "avoid",
    "award",
    "balance",
    "base",
    "battle",
    "bear",
    "beat",
    "become",
    "begin",
    "believe",
    "belong",
    "benefit",
    "bind",
    "blend",
    "border",
    "borrow",
    "break",
    "breathe",
    "bring",
    "build",
    "buy",
    "calculate",
    "call",
    "capture",
    "care",
    "caricature",
    "carry",
    "catch",
    "cause",
    "cede",
    "celebrate",
    "cement",
    "challenge",
    "change",
    "channel",
    "characterize",
    "charge",
    "chart",
    "check",
    "choose",
    "claim",
    "classify",
    "clean",
    "climb",
    "close",
    "codify",
    "coexist",
    "coin",
    "collaborate",
    "collect",
    "combat",
    "combine",
    "come",
    "command",
    "commemorate",
    "commit",
    "communicate",
    "compare",
    "compensate",
    "compete",
    "compile",
    "complement",
    "complete",
    "compose",
    "comprise",
    "conceptualize",
    "concern",
    "conclude",
    "conduct",
    "conform",
    "congregate",
    "connect",
    "conquer",
    "consider",
    "consist",
    "consolidate",
    "constitute",
    "construct",
    "consume",
    "contact",
    "contain",
    "continue",
    "contract",
    "contrast",
    "contribute",
    "control",
    "converge",
    "convert",
    "convey",
    "cool",
    "correct",
    "correspond",
    "cost",
    "count",
    "counter",
    "cover",
    "create",
    "cross",
    "crown",
    "crush",
    "cultivate",
    "cut",
    "damage",
    "dance",
    "date",
    "deal",
    "debut",
    "decay",
    "decide",
    "declare",
    "decline",
    "decode",
    "decompose",
    "decorate",
    "decrease",
    "defend",
    "define",
    "deliver",
    "demonstrate",
    "denote",
    "depend",
    "depict",
    "depose",
    "deprive",
    "derive",
    "descend",
    "describe",
    "design",
    "designate",
    "destroy",
    "detect",
    "determine",
    "develop",
    "diagnose",
    "die",
    "differ",
    "differentiate",
    "digest",
    "direct",
    "discover",
    "discuss",
    "disinfect",
    "displace",
    "display",
    "distinguish",
    "distort",
    "divide",
    "document",
    "dominate",
    "drain",
    "draw",
    "drink",
    "drive",
    "dub",
    "earn",
    "eat",
    "edit",
    "elaborate",
    "elect",
    "eliminate",
    "elucidate",
    "emerge",
    "emit",
    "emphasize",
    "employ",
    "empty",
    "enable",
    "enact",
    "enclose",
    "encode",
    "encompass",
    "encounter",
    "encourage",
    "end",
    "endure",
    "enforce",
    "engage",
    "enhance",
    "enjoy",
    "ensure",
    "enter",
    "entertain",
    "equal",
    "erect",
    "escape",
    "establish",
    "estimate",
    "evade",
    "evaluate",
    "evoke",
    "evolve",
    "examine",
    "exceed",
    "exchange",
    "exclude",
    "execute",
    "exercise",
    "exert",
    "exhibit",
    "exile",
    "exist",
    "expand",
    "expect",
    "experience",
    "explain",
    "explore",
    "express",
    "extend",
    "extract",
    "face",
    "facilitate",
    "fail",
    "fall",
    "favor",
    "feature",
    "feed",
    "feel",
    "fight",
    "fill",
    "filter",
    "find",
    "finish",
    "fit",
    "flank",
    "flatten",
    "flee",
    "flow",
    "fly",
    "focus",
    "follow",
    "force",
    "form",
    "formalize",
    "foster",
    "found",
    "fracture",
    "freeze",
    "function",
    "fund",
    "fuse",
    "gain",
    "gather",
    "generate",
    "get",
    "give",
    "glow",
    "go",
    "govern",
    "grant",
    "gross",
    "grow",
    "guide",
    "hand",
    "handle",
    "hang",
    "happen",
    "harm",
    "harness",
    "harvest",
    "head",
    "headline",
    "headquarter",
    "hear",
    "heat",
    "help",
    "herd",
    "hit",
    "hold",
    "honor",
    "honour",
    "host",
    "house",
    "hunt",
    "identify",
    "ignite",
    "illustrate",
    "imitate",
    "impart",
    "implement",
    "imply",
    "impose",
    "improve",
    "inaugurate",
    "include",
    "incorporate",
    "increase",
    "indicate",
    "induce",
    "infect",
    "inflict",
    "influence",
    "inform",
    "inhabit",
    "inherit",
    "inhibit",
    "initiate",
    "inspire",
    "integrate",
    "intend",
    "interact",
    "interpret",
    "introduce",
    "invade",
    "invent",
    "investigate",
    "invoke",
    "involve",
    "isolate",
    "issue",
    "join",
    "judge",
    "jump",
    "keep",
    "kill",
    "know",
    "lack",
    "land",
    "last",
    "launch",
    "lay",
    "lead",
    "leap",
    "learn",
    "leave",
    "legitimize",
    "lie",
    "lift",
    "light",
    "limit",
    "link",
    "list",
    "listen",
    "live",
    "load",
    "locate",
    "look",
    "loosen",
    "lose",
    "love",
    "maintain",
    "make",
    "manage",
    "manoeuvre",
    "manufacture",
    "mark",
    "marry",
    "match",
    "maximize",
    "mean",
    "measure",
    "meet",
    "melt",
    "mention",
    "merge",
    "migrate",
    "mimic",
    "minimize",
    "mitigate",
    "model",
    "modify",
    "move",
    "multiply",
    "name",
    "narrate",
    "navigate",
    "need",
    "negotiate",
    "nickname",
    "note",
    "number",
    "observe",
    "obtain",
    "occupy",
    "occur",
    "offer",
    "open",
    "operate",
    "oppose",
    "orbit",
    "orchestrate",
    "order",
    "organise",
    "organize",
    "originate",
    "oscillate",
    "outline",
    "overcome",
    "overlap",
    "overlook",
    "own",
    "paint",
    "participate",
    "pass",
    "patent",
    "pay",
    "pen",
    "perceive",
    "perform",
    "permit",
    "persist",
    "place",
    "plan",
    "plant",
    "play",
    "point",
    "popularise",
    "popularize",
    "portray",
    "possess",
    "power",
    "practice",
    "preach",
    "precede",
    "predict",
    "prefer",
    "premier",
    "premiere",
    "prepare",
    "present",
    "preserve",
    "prevail",
    "prevent",
    "print",
    "proceed",
    "produce",
    "profess",
    "progress",
    "promote",
    "propagate",
    "propel",
    "propose",
    "prosecute",
    "protect",
    "prove",
    "provide",
    "provoke",
    "publish",
    "punish",
    "purchase",
    "pursue",
    "qualify",
    "quantify",
    "raise",
    "range",
    "rank",
    "rate",
    "ratify",
    "reach",
    "react",
    "read",
    "rebrand",
    "rebuild",
    "receive",
    "recognise",
    "recognize",
    "record",
    "recover",
    "reduce",
    "refer",
    "reflect",
    "reform",
    "refuse",
    "regard",
    "regulate",
    "reign",
    "reject",
    "relate",
    "release",
    "relieve",
    "relocate",
    "rely",
    "remain",
    "remove",
    "rename",
    "replace",
    "replicate",
    "report",
    "represent",
    "reproduce",
    "require",
    "rescue",
    "research",
    "resemble",
    "reside",
    "resign",
    "resist",
    "resolve",
    "respect",
    "respond",
    "rest",
    "restore",
    "restrict",
    "result",
    "retain",
    "retire",
    "return",
    "reveal",
    "reverse",
    "revive",
    "rid",
    "rise",
    "rival",
    "roll",
    "rotate",
    "rule",
    "run",
    "sail",
    "satisfy",
    "save",
    "say",
    "score",
    "scratch",
    "secure",
    "see",
    "seek",
    "seem",
    "seize",
    "select",
    "sell",
    "send",
    "separate",
    "serve",
    "set",
    "settle",
    "shape",
    "share",
    "shed",
    "shift",
    "shoot",
    "show",
    "sign",
    "simulate",
    "sing",
    "sink",
    "sit",
    "slow",
    "solve",
    "sound",
    "span",
    "speak",
    "specialise",
    "specialize",
    "specify",
    "speed",
    "spend",
    "spin",
    "split",
    "sponsor",
    "spray",
    "spread",
    "stage",
    "stand",
    "standardise",
    "star",
    "start",
    "state",
    "stay",
    "steal",
    "stem",
    "stimulate",
    "sting",
    "stop",
    "store",
    "strengthen",
    "stress",
    "stretch",
    "strike",
    "strip",
    "strive",
    "study",
    "stun",
    "succeed",
    "suffer",
    "suggest",
    "supplement",
    "supply",
    "support",
    "suppress",
    "surpass",
    "surrender",
    "surround",
    "survive",
    "sustain",
    "synthesize",
    "take",
    "taste",
    "teach",
    "tell",
    "tend",
    "term",
    "test",
    "think",
    "thrive",
    "tolerate",
    "top",
    "touch",
    "tour",
    "trace",
    "track",
    "train",
    "transfer",
    "transform",
    "translate",
    "transmit",
    "transport",
    "travel",
    "treat",
    "trigger",
    "try",
    "turn",
    "uncover",
    "undergo",
    "understand",
    "unite",
    "uphold",
    "urinate",
    "use",
    "utilize",
    "vary",
    "vibrate",
    "view",
    "violate",
    "visit",
    "vote",
    "walk",
    "want",
    "wear",
    "win",
    "wind",
    "withdraw",
    "withstand",
    "witness",
    "work",
    "worsen",
    "write",
    "yield",
];

/// Words a subordinate clause opens with.
const SUBORDINATORS: &[&str] = &[
    "although", "though", "while", "whilst", "whereas", "because", "if", "unless", "when",
    "whenever", "since", "until", "till", "once", "before", "after", "as",
];

/// Participles and prepositions that open an introductory phrase ("Born in …,").
const INTRODUCERS: &[&str] = &[
    "in",
    "on",
    "at",
    "by",
    "for",
    "from",
    "with",
    "without",
    "within",
    "during",
    "after",
    "before",
    "since",
    "until",
    "under",
    "over",
    "among",
    "between",
    "through",
    "throughout",
    "despite",
    "following",
    "according",
    "like",
    "unlike",
    "upon",
    "of",
    "to",
    "from",
    "around",
    "beyond",
    "near",
    "outside",
    "inside",
    "besides",
    "alongside",
    "across",
    "against",
    "amid",
    "behind",
    "beside",
    "toward",
    "towards",
    "except",
    "apart",
    "compared",
    "however",
    "today",
    "originally",
    "historically",
    "traditionally",
    "currently",
    "later",
    "initially",
    "eventually",
    "meanwhile",
    "moreover",
    "furthermore",
    "additionally",
    "also",
    "thus",
    "consequently",
    "nevertheless",
    "nonetheless",
    "instead",
    "overall",
    "generally",
    "typically",
    "usually",
    "here",
    "there",
    "born",
    "located",
    "situated",
    "founded",
    "established",
    "based",
    "directed",
    "written",
    "named",
    "known",
    "built",
    "designed",
    "produced",
    "set",
    "filmed",
    "derived",
    "considered",
    "regarded",
    "described",
    "composed",
    "painted",
    "published",
    "released",
    "starting",
    "beginning",
    "being",
    "having",
];

/// Personal and demonstrative pronouns: a subject that needs the text before it.
const PRONOUNS: &[&str] = &[
    "it", "he", "she", "they", "we", "you", "i", "this", "that", "these", "those", "its", "his",
    "her", "their", "them", "him", "both", "such", "which", "who", "former", "latter",
];

/// Determiners that make a noun phrase point back into the text ("this method").
const POINTING: &[&str] = &[
    "this", "that", "these", "those", "its", "his", "her", "their", "our", "such", "said",
    "another",
];

/// Words that open a noun phrase by quantity ("Many of these works").
const QUANTIFIERS: &[&str] = &[
    "many", "most", "some", "all", "several", "few", "each", "both", "one", "two", "none", "much",
    "half", "part", "any",
];

/// Head nouns that name a word or a name ("The term photosynthesis …"): with a word
/// after them the phrase says which.
const NAMING_NOUNS: &[&str] = &[
    "term",
    "word",
    "name",
    "phrase",
    "expression",
    "title",
    "concept",
    "notion",
    "label",
];

/// A definite noun phrase that says nothing about which thing it means: "the" and one or
/// two more lowercase words ("The film", "The main character"), with no "of" complement
/// ("The area of a triangle" says which) and not a naming noun with its word ("The term
/// photosynthesis"). Three or more words describe a kind ("The common house mouse").
fn bare_definite(head: &[&Word<'_>]) -> bool {
    let rest = &head[1..];
    if let Some(of) = rest.iter().position(|w| w.lower == "of") {
        // "The area of a triangle" says which; "The surface of the gulf" does not.
        let after = &rest[of + 1..];
        return after.first().is_some_and(|w| w.lower == "the")
            && after.len() <= 3
            && after[1..].iter().all(|w| !capitalised(w) && !figure(w));
    }
    if rest
        .first()
        .is_some_and(|w| in_list(NAMING_NOUNS, &w.lower))
        && rest.get(1).is_some_and(|w| {
            w.quoted || capitalised(w) || !(w.lower.ends_with("ly") || in_list(ADVERBS, &w.lower))
        })
    {
        return false;
    }
    rest.len() <= 2
}

/// Adverbs that may stand between a subject and its verb ("The term later took on …").
const ADVERBS: &[&str] = &[
    "later",
    "also",
    "often",
    "still",
    "now",
    "then",
    "first",
    "originally",
    "again",
    "once",
    "soon",
    "thus",
    "however",
    "too",
    "already",
    "never",
    "always",
    "since",
];

/// Words that make the next words a relative clause.
const RELATIVES: &[&str] = &["which", "who", "whom", "whose", "where"];

/// Prepositions: after a participle they make it a reduced relative clause.
const PREPOSITIONS: &[&str] = &[
    "in",
    "on",
    "at",
    "by",
    "from",
    "for",
    "as",
    "with",
    "to",
    "into",
    "near",
    "under",
    "after",
    "during",
    "between",
    "along",
    "across",
    "within",
    "throughout",
    "since",
];

/// Pronouns a base form agrees with.
const PLURAL_PRONOUNS: &[&str] = &["they", "we", "you", "i", "these", "those", "both", "many"];

/// Plurals that do not end in "s".
const IRREGULAR_PLURALS: &[&str] = &[
    "people",
    "children",
    "men",
    "women",
    "mice",
    "geese",
    "teeth",
    "feet",
    "data",
    "media",
    "criteria",
    "phenomena",
    "fungi",
    "cacti",
    "alumni",
    "bacteria",
    "police",
    "cattle",
];

/// Words after which a verb's base or `-s` form is a noun ("the design", "of studies").
const BEFORE_NOUN: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "its", "his", "her", "their", "our", "of",
    "by", "with", "for", "in", "on", "at", "from", "to", "as", "is", "are", "was", "were", "be",
    "been", "being", "has", "have", "had", "each", "every", "some", "any", "no", "my", "your",
];

/// Words after which an `-ed` word is an adjective or a participle, not a finite verb.
const BEFORE_ADJECTIVE: &[&str] = &[
    "the",
    "a",
    "an",
    "this",
    "that",
    "these",
    "those",
    "its",
    "his",
    "her",
    "their",
    "our",
    "of",
    "by",
    "with",
    "for",
    "in",
    "on",
    "at",
    "from",
    "to",
    "and",
    "or",
    "as",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "has",
    "have",
    "had",
    "very",
    "most",
    "more",
    "well",
    "newly",
    "highly",
    "widely",
    "well-known",
    "less",
    "least",
    "so",
];

/// Determiners: what follows them is a noun phrase.
const DETERMINERS: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "its", "his", "her", "their", "our", "my",
    "your", "each", "every", "some", "any", "no",
];

/// Whether `l` is a word in `-ed` or `-ing` that is no verb form ("hundred", "thing").
pub(crate) fn not_past(l: &str) -> bool {
    in_list(NOT_PAST, l)
}

/// Words in `-ed` and `-ing` that are not verb forms.
const NOT_PAST: &[&str] = &[
    "hundred",
    "indeed",
    "speed",
    "breed",
    "creed",
    "greed",
    "sacred",
    "naked",
    "wicked",
    "beloved",
    "rugged",
    "ragged",
    "kindred",
    "hatred",
    "shred",
    "steed",
    "embed",
    "thing",
    "nothing",
    "something",
    "anything",
    "everything",
    "king",
    "ring",
    "spring",
    "string",
    "wing",
    "morning",
    "evening",
    "ceiling",
    "during",
    "beijing",
    "viking",
    "sterling",
    "shilling",
    "pudding",
    "wedding",
    "building",
    "painting",
    "meaning",
    "beginning",
    "feeling",
    "setting",
    "ending",
    "writing",
    "reading",
    "recording",
    "training",
    "funding",
    "clothing",
    "housing",
    "spelling",
    "offspring",
    "ming",
    "qing",
    "darling",
    "sibling",
];

/// One word of a statement: its text, lowercased, and where it stands.
#[derive(Debug, Clone)]
pub(crate) struct Word<'a> {
    pub(crate) text: &'a str,
    pub(crate) lower: String,
    /// Byte offset in the statement.
    pub(crate) at: usize,
    /// Inside double quotes: a quoted title or phrase ("form follows function"), never a
    /// verb of the statement.
    pub(crate) quoted: bool,
}

/// A word or a comma, in order.
#[derive(Debug, Clone)]
enum Piece<'a> {
    Word(Word<'a>),
    Comma,
}

fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut quoted = false;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let inner = matches!(c, '\'' | '\u{2019}' | '-')
            && start.is_some()
            && chars.get(k + 1).is_some_and(|(_, n)| n.is_alphanumeric());
        if c.is_alphanumeric() || inner {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            out.push(word(text, s, i, quoted));
        }
        match c {
            '"' => quoted = !quoted,
            '\u{201c}' => quoted = true,
            '\u{201d}' => quoted = false,
            _ => {}
        }
        if matches!(c, ',' | ';' | ':' | '(' | ')' | '\u{2013}' | '\u{2014}') {
            out.push(Piece::Comma);
        }
    }
    if let Some(s) = start {
        out.push(word(text, s, text.len(), quoted));
    }
    out
}

fn word(text: &str, s: usize, e: usize, quoted: bool) -> Piece<'_> {
    let t = &text[s..e];
    Piece::Word(Word {
        text: t,
        lower: t.to_lowercase().replace('\u{2019}', "'"),
        at: s,
        quoted,
    })
}

fn capitalised(w: &Word<'_>) -> bool {
    w.text.chars().next().is_some_and(char::is_uppercase)
}

fn figure(w: &Word<'_>) -> bool {
    w.text.chars().next().is_some_and(|c| c.is_ascii_digit())
}

fn in_list(list: &[&str], w: &str) -> bool {
    list.contains(&w)
}

/// `w`'s base form when it is an inflected form of a lexicon verb.
fn lexicon_form(w: &str) -> Option<&'static str> {
    let candidates = [
        w.strip_suffix("ies").map(|b| format!("{b}y")),
        w.strip_suffix("es").map(str::to_owned),
        w.strip_suffix('s').map(str::to_owned),
        w.strip_suffix("ied").map(|b| format!("{b}y")),
        w.strip_suffix("ed").map(str::to_owned),
        w.strip_suffix('d').map(str::to_owned),
        // A doubled consonant: "starred", "planned".
        w.strip_suffix("ed")
            .filter(|b| b.len() > 2 && b.as_bytes()[b.len() - 1] == b.as_bytes()[b.len() - 2])
            .map(|b| b[..b.len() - 1].to_owned()),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|b| VERBS.iter().copied().find(|v| *v == b))
}

/// Whether word `k` of `words` is a finite verb (see the module docs). `first` is the
/// index of the clause's first word: a base form there is an imperative or a noun, never
/// the verb of a subject before it.
fn finite(words: &[&Word<'_>], after_comma: &[bool], k: usize, first: usize) -> bool {
    let w = words[k];
    let l = w.lower.as_str();
    if w.quoted || (capitalised(w) && k != first) {
        return false;
    }
    if in_list(AUXILIARIES, l) {
        return true;
    }
    if k == first {
        return false;
    }
    // A capitalised word before is a name ("Thomas More served"), never a determiner.
    let prev_word = words[k - 1];
    let prev = if capitalised(prev_word) && k - 1 != first {
        ""
    } else {
        prev_word.lower.as_str()
    };
    let next = words.get(k + 1).map(|n| n.lower.as_str());
    if in_list(IRREGULAR_PAST, l) {
        // "the left wing", "a set of": after a determiner it is a noun or an adjective.
        return !in_list(DETERMINERS, prev);
    }
    let past = l.ends_with("ed");
    // "directed by", ", headquartered in Paris": a participle, not the verb of a clause
    // (", married Marie Antoinette" is one).
    if past
        && (next == Some("by")
            || (after_comma[k] && next.is_some_and(|n| in_list(PREPOSITIONS, n))))
    {
        return false;
    }
    // "to receive", "to posthumously receive": an infinitive.
    if prev == "to" || (k >= 2 && words[k - 2].lower == "to" && prev.ends_with("ly")) {
        return false;
    }
    if in_list(VERBS, l) {
        // A base form is finite only after a plural subject ("Electrons carry", "People
        // design", "Keir Dullea and Gary Lockwood star"): after a singular noun it is a
        // noun itself ("The common house mouse").
        let plural = words[first..k].iter().any(|w| w.lower == "and")
            || in_list(PLURAL_PRONOUNS, prev)
            || in_list(IRREGULAR_PLURALS, prev)
            || (prev.ends_with('s')
                && !prev.ends_with("ss")
                && !prev.ends_with("us")
                && !prev.ends_with("is"))
            || (prev.ends_with("ly") && k >= 2);
        return plural && !in_list(BEFORE_NOUN, prev);
    }
    if lexicon_form(l).is_some() {
        // An -s or -ed form is finite after a subject or an adverb ("also studies");
        // after a determiner, a preposition or an auxiliary it is a noun, an adjective or
        // a participle.
        let blocked = if past {
            in_list(BEFORE_ADJECTIVE, prev)
        } else {
            in_list(BEFORE_NOUN, prev)
        };
        return !blocked;
    }
    l.len() > 4 && past && !in_list(BEFORE_ADJECTIVE, prev) && !in_list(NOT_PAST, l)
}

/// Whether `l` (lowercased) is an inflected verb form: an irregular past form, or the
/// `-s`, `-ed` or `-ing` form of a lexicon verb. Base forms are left out: most are nouns
/// too ("work", "record").
pub(crate) fn inflected_verb(l: &str) -> bool {
    if in_list(IRREGULAR_PAST, l) {
        return true;
    }
    if in_list(VERBS, l) {
        return false;
    }
    lexicon_form(l).is_some()
        || l.strip_suffix("ing").is_some_and(|b| {
            in_list(VERBS, b)
                || VERBS.iter().any(|v| v.strip_suffix('e') == Some(b))
                || (b.len() > 2
                    && b.as_bytes()[b.len() - 1] == b.as_bytes()[b.len() - 2]
                    && in_list(VERBS, &b[..b.len() - 1]))
        })
}

/// The statement's opening phrase `np` names something `source` only mentions: its head
/// (last word) is in the source, but not as the subject of a clause there — not followed
/// by a verb or by ", which"/"who"/"that". `None` when it is a clause's subject in the
/// source, or is not in it.
pub(crate) fn mentioned_only(np: &str, source: &str) -> Option<String> {
    let np_words = words_of(np);
    let name: Vec<&Word<'_>> = np_words
        .iter()
        .filter(|w| !in_list(DETERMINERS, &w.lower))
        .collect();
    // The phrase's head, its last word: "Lakes" of "The North American Great Lakes".
    let last = name.last()?;
    let all = pieces(source);
    let found = all.iter().enumerate().find_map(|(k, p)| match p {
        Piece::Word(w) if w.lower == last.lower || w.lower == format!("{}'s", last.lower) => {
            Some((k, w))
        }
        _ => None,
    })?;
    let (k, w) = found;
    if w.lower.ends_with("'s") && !last.lower.ends_with("'s") {
        return Some(name.iter().map(|w| w.text).collect::<Vec<_>>().join(" "));
    }
    let word_at = |j: usize| match all.get(j) {
        Some(Piece::Word(w)) => Some(w),
        _ => None,
    };
    let subject_here = match all.get(k + 1) {
        Some(Piece::Word(n)) => {
            in_list(AUXILIARIES, &n.lower)
                || inflected_verb(&n.lower)
                || in_list(RELATIVES, &n.lower)
                || n.lower == "that"
        }
        Some(Piece::Comma) => {
            word_at(k + 2).is_some_and(|n| in_list(RELATIVES, &n.lower) || n.lower == "that")
        }
        None => false,
    };
    (!subject_here).then(|| name.iter().map(|w| w.text).collect::<Vec<_>>().join(" "))
}

/// Whether `phrase` holds `name` as whole words, case aside ("The action film" holds
/// "action film").
pub(crate) fn names_in(phrase: &str, name: &str) -> bool {
    let p: Vec<String> = words_of(phrase).into_iter().map(|w| w.lower).collect();
    let n: Vec<String> = words_of(name).into_iter().map(|w| w.lower).collect();
    !n.is_empty() && p.windows(n.len()).any(|w| w == n.as_slice())
}

/// Whether `l` is a verb of the lexicon in its base form.
pub(crate) fn base_verb(l: &str) -> bool {
    in_list(VERBS, l)
}

/// Personal pronouns, demonstratives and category nouns after "the" that a sentence
/// uses for something named before it ("… converted it into …", "this geopolitical
/// divide", "the country's capital").
const CATEGORY_NOUNS: &[&str] = &[
    "country",
    "nation",
    "city",
    "town",
    "village",
    "state",
    "province",
    "region",
    "capital",
    "island",
    "river",
    "lake",
    "mountain",
    "sea",
    "company",
    "firm",
    "corporation",
    "organization",
    "organisation",
    "group",
    "band",
    "team",
    "club",
    "party",
    "museum",
    "gallery",
    "palace",
    "castle",
    "temple",
    "church",
    "cathedral",
    "tower",
    "bridge",
    "building",
    "site",
    "monument",
    "complex",
    "university",
    "college",
    "school",
    "institute",
    "film",
    "movie",
    "series",
    "show",
    "episode",
    "album",
    "song",
    "single",
    "opera",
    "play",
    "novel",
    "book",
    "poem",
    "story",
    "work",
    "painting",
    "sculpture",
    "statue",
    "game",
    "sport",
    "league",
    "war",
    "battle",
    "conflict",
    "revolution",
    "movement",
    "empire",
    "kingdom",
    "dynasty",
    "republic",
    "government",
    "army",
    "treaty",
    "agreement",
    "term",
    "word",
    "concept",
    "theory",
    "element",
    "compound",
    "species",
    "genus",
    "family",
    "disease",
    "language",
    "religion",
    "mission",
    "programme",
    "program",
    "project",
    "system",
    "network",
    "journal",
    "newspaper",
    "magazine",
    "award",
    "prize",
    "festival",
    "event",
    "ship",
    "aircraft",
    "vehicle",
    "emperor",
    "king",
    "queen",
    "pope",
    "president",
    "author",
    "artist",
    "composer",
    "writer",
    "poet",
    "actor",
    "actress",
    "singer",
    "player",
    "city's",
    "country's",
    "company's",
    "planet",
    "star",
    "galaxy",
    "tomb",
    "mosque",
    "monastery",
    "organ",
    "instrument",
    "device",
    "machine",
    "process",
    "method",
    "technique",
    "style",
    "genre",
    "area",
    "territory",
    "peninsula",
    "desert",
    "forest",
    "park",
    "lake's",
    "collection",
    "museum's",
    "university's",
    "band's",
    "film's",
    "novel's",
    "series'",
];

/// Whether `sentence` leans on the text before it anywhere, not only in its subject: its
/// opening refers back ([`Reading::refers_back`]), or it holds a personal pronoun, a
/// demonstrative before a noun, or "the" before a category noun ("the country").
pub(crate) fn leans_back(sentence: &str) -> bool {
    if read(sentence).refers_back() {
        return true;
    }
    let ws: Vec<Piece<'_>> = pieces(sentence);
    let words: Vec<&Word<'_>> = ws
        .iter()
        .filter_map(|p| match p {
            Piece::Word(w) => Some(w),
            Piece::Comma => None,
        })
        .collect();
    words.iter().enumerate().any(|(k, w)| {
        let l = w.lower.as_str();
        let next = words.get(k + 1).map(|n| n.lower.as_str());
        in_list(PERSONAL, l)
            || (matches!(l, "this" | "these" | "those" | "that")
                && next.is_some_and(|n| !in_list(AUXILIARIES, n) && !in_list(DETERMINERS, n)))
            || (l == "the"
                && next.is_some_and(|n| in_list(CATEGORY_NOUNS, n))
                && words.get(k + 2).is_none_or(|n| n.lower != "of"))
    })
}

/// How `subject` stands in `phrase` when it is not the phrase's head: "a modifier"
/// ("Korean popular culture"), "a possessive" ("Seurat's most famous work") or "a
/// complement" ("The Elizabeth Tower of the Palace of Westminster"); `None` when it is the
/// head or is not found by its last word.
pub(crate) fn dependent_in(subject: &str, phrase: &str) -> Option<&'static str> {
    let subject_words = words_of(subject);
    let last = subject_words.last()?;
    let phrase_words = words_of(phrase);
    // A plural and its singular are one name here ("Accordions", "the accordion").
    let same = |a: &str, b: &str| {
        a == b || a.strip_suffix('s') == Some(b) || b.strip_suffix('s') == Some(a)
    };
    let k = phrase_words
        .iter()
        .position(|w| same(&w.lower, &last.lower) || w.lower == format!("{}'s", last.lower))?;
    let first = k + 1 - subject_words.len().min(k + 1);
    let w = &phrase_words[k];
    if w.lower.ends_with("'s") && !last.lower.ends_with("'s") {
        return Some("a possessive");
    }
    // A lowercase word right after the name makes the name its modifier ("The 1755 Lisbon
    // earthquake"); a preposition there opens a phrase about the name, which stays the
    // head ("Abstract expressionism in the United States").
    if let Some(next) = phrase_words.get(k + 1)
        && !capitalised(next)
        && !figure(next)
        && !in_list(
            &[
                "and",
                "or",
                "of",
                "&",
                "who",
                "which",
                "that",
                "in",
                "at",
                "on",
                "from",
                "during",
                "since",
                "by",
                "with",
                "for",
                "to",
                "under",
                "between",
                "after",
                "before",
                "across",
                "throughout",
                "within",
            ],
            &next.lower,
        )
        && phrase[w.at + w.text.len()..next.at].trim().is_empty()
    {
        return Some("a modifier");
    }
    // A complement after a preposition, over its determiner and lowercase modifiers: "The
    // essential characteristic of the accordion", "Examples of pre-colonial African
    // literature", "Key figures in the New York School".
    let mut j = first;
    while j > 0 && first - j < 3 {
        let before = &phrase_words[j - 1];
        if in_list(
            &["of", "in", "for", "from", "about", "on", "at", "among"],
            &before.lower,
        ) {
            // A part of a whole is about the whole: "About 45% of the visitors", "Many of
            // the works".
            let partitive = j > 1 && {
                let head = &phrase_words[j - 2];
                figure(head) || in_list(QUANTIFIERS, &head.lower) || head.text.ends_with('%')
            };
            return (j > 1 && !partitive).then_some("a complement");
        }
        let modifier = in_list(DETERMINERS, &before.lower)
            || matches!(before.lower.as_str(), "the" | "a" | "an")
            || !(capitalised(before) || figure(before));
        if !modifier {
            break;
        }
        j -= 1;
    }
    None
}

/// A determiner right before a preposition, a conjunction or another determiner ("the
/// signing of the in 1949"): words left out of the middle of a phrase.
pub(crate) fn garbled(statement: &str) -> Option<String> {
    let ws = words_of(statement);
    let pair = ws.windows(2).find_map(|p| {
        let (a, b) = (p[0].lower.as_str(), p[1].lower.as_str());
        if capitalised(&p[1]) {
            return None;
        }
        let determiner = matches!(a, "the" | "a" | "an");
        let joins = in_list(DETERMINERS, b)
            || matches!(
                b,
                "in" | "of"
                    | "on"
                    | "at"
                    | "by"
                    | "for"
                    | "from"
                    | "with"
                    | "to"
                    | "and"
                    | "or"
                    | "but"
                    | "is"
                    | "are"
                    | "was"
                    | "were"
            );
        let copula_then_and =
            matches!(a, "is" | "are" | "was" | "were") && matches!(b, "and" | "or");
        ((determiner && joins) || copula_then_and).then(|| format!("{} {}", p[0].text, p[1].text))
    });
    if pair.is_some() {
        return pair;
    }
    // A relative clause with no verb after its pronoun: "a game in which at least two
    // players".
    let r = ws
        .iter()
        .rposition(|w| matches!(w.lower.as_str(), "which" | "whom" | "whose"))?;
    let verb_after = ws[r + 1..].iter().any(|w| {
        in_list(AUXILIARIES, &w.lower)
            || inflected_verb(&w.lower)
            || in_list(VERBS, &w.lower)
            || (w.lower.len() > 4 && w.lower.ends_with("ed"))
    });
    (!verb_after).then(|| format!("{} with no verb after it", ws[r].text))
}

/// The words of `text`, commas left out.
fn words_of(text: &str) -> Vec<Word<'_>> {
    pieces(text)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Word(w) => Some(w),
            Piece::Comma => None,
        })
        .collect()
}

/// How a statement opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opening {
    /// A subject with a name, a figure or a generic noun, then a finite verb.
    Subject,
    /// A pronoun ("It", "They").
    Pronoun(String),
    /// A demonstrative or possessive phrase without a name ("This method", "Its plot").
    Pointing(String),
    /// A definite noun phrase without a name ("The film").
    Definite(String),
    /// No main clause: the reason in a few words.
    NoMainClause(&'static str),
}

/// A statement that stops before it is done: it trails off in an ellipsis ("… who adopts
/// a character..."), or, with no closing punctuation, ends on an auxiliary or a relative
/// word ("… skills that are").
pub(crate) fn unfinished(statement: &str) -> Option<String> {
    let t = statement.trim_end();
    if t.ends_with("...") || t.ends_with('…') {
        return Some("an ellipsis".to_owned());
    }
    if t.ends_with(['.', '!', '?', '"', '\'', ')', '”', '’']) {
        return None;
    }
    let last = t
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '\''))
        .find(|w| !w.is_empty())?;
    let lower = last.to_lowercase();
    (in_list(AUXILIARIES, &lower) || matches!(lower.as_str(), "that" | "which" | "who" | "whose"))
        .then(|| format!("{last:?}"))
}

/// A demonstrative phrase inside a statement whose subject is a name ("during this
/// century", "the center of this movement"): it points back into the document, so the
/// statement cannot be read alone. Capitalised, it opens the statement (judged as its
/// opening) or is part of a title ("This Is Us") and points nowhere.
pub(crate) fn points_back_inside(statement: &str) -> Option<String> {
    let rest = statement;
    let is_word = |c: char| c.is_alphanumeric() || c == '-' || c == '\'';
    let mut words: Vec<(usize, &str)> = Vec::new();
    let mut start = None;
    for (i, c) in rest
        .char_indices()
        .chain(std::iter::once((rest.len(), ' ')))
    {
        match (is_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, &rest[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    words.windows(2).find_map(|pair| {
        let ((at, w), (next_at, next)) = (pair[0], pair[1]);
        // A century or decade with no figure is the one the document was speaking of.
        if w == "the" && matches!(next, "century" | "decade") {
            return Some(rest[at..next_at + next.len()].to_owned());
        }
        let determiner = matches!(w, "this" | "these" | "those");
        let noun = next.chars().next().is_some_and(char::is_lowercase)
            && !in_list(AUXILIARIES, next)
            && !in_list(PRONOUNS, next);
        (determiner && noun).then(|| rest[at..next_at + next.len()].to_owned())
    })
}

/// A statement as the checks read it: how it opens, and the words of its opening noun
/// phrase (byte range in the statement).
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    pub(crate) opening: Opening,
    /// The opening noun phrase, `statement[np.0..np.1]`; empty when there is none.
    pub(crate) np: (usize, usize),
    /// A personal pronoun or possessive somewhere in the opening noun phrase ("he and
    /// Joe Simon", "The author of 100 books, his works").
    np_pronoun: bool,
    /// The main verb, lowercased: the finite verb, or the participle an auxiliary carries
    /// ("bordered" in "is bordered by"); `None` without a main clause.
    pub(crate) verb: Option<String>,
}

impl Reading {
    /// The sentence leans on the text before it for what it is about: its subject is a
    /// pronoun, a pointing or definite phrase without a name, holds a pronoun ("he and
    /// Joe Simon"), or is left out ("Nicknamed the City of the Sun, formerly known as
    /// Thebes.").
    pub(crate) fn refers_back(&self) -> bool {
        self.np_pronoun
            || matches!(
                self.opening,
                Opening::Pronoun(_)
                    | Opening::Pointing(_)
                    | Opening::Definite(_)
                    | Opening::NoMainClause(_)
            )
    }
}

/// Personal pronouns and possessives that stand for something named before.
const PERSONAL: &[&str] = &[
    "he", "she", "it", "they", "him", "her", "them", "his", "its", "their",
];

/// Read `text` (see the module docs).
pub(crate) fn read(text: &str) -> Reading {
    let none = |why: &'static str| Reading {
        opening: Opening::NoMainClause(why),
        np: (0, 0),
        np_pronoun: false,
        verb: None,
    };
    let all = pieces(text);
    let start = match past_introduction(&all) {
        Ok(start) => start,
        Err(why) => return none(why),
    };
    let clause = main_clause(&all, start);
    let words = &clause.words;
    if words.is_empty() {
        return none("no words after its introductory phrase");
    }
    let Some(v) = (0..words.len()).find(|&k| finite(words, &clause.after_comma, k, 0)) else {
        return none("no finite verb");
    };
    if v == 0 {
        return none("no subject before its verb");
    }
    let np_words = &words[..subject_end(words, v)];
    let np = (
        np_words[0].at,
        np_words[np_words.len() - 1].at + np_words[np_words.len() - 1].text.len(),
    );
    let np_end = np_words.len();
    let head = &np_words[..clause.head_end.unwrap_or(np_end).clamp(1, np_end)];
    let opening = match head_opening(text, head) {
        Opening::Subject => unanchored_pronoun(text, np_words, np),
        other => other,
    };
    Reading {
        opening,
        np,
        np_pronoun: np_words.iter().any(|w| in_list(PERSONAL, &w.lower)),
        verb: Some(main_verb(words, v)),
    }
}

/// Where the main clause starts: past the introductory phrases, each up to its comma; or
/// why there is no main clause.
fn past_introduction(all: &[Piece<'_>]) -> Result<usize, &'static str> {
    let mut i = 0;
    while let Some(Piece::Word(first)) = all.get(i) {
        let l = first.lower.as_str();
        // "Widely regarded as …", "Strongly influenced by …": an adverb and a participle.
        let adverb_participle = l.ends_with("ly")
            && matches!(all.get(i + 1), Some(Piece::Word(n)) if n.lower.ends_with("ed"));
        // "Along with the peach, it …", "Together with sloths, they …"; not "Along the
        // River During the Qingming Festival", a title.
        let with = matches!(l, "along" | "together")
            && matches!(all.get(i + 1), Some(Piece::Word(n)) if n.lower == "with");
        let participle = in_list(INTRODUCERS, l) || adverb_participle || with;
        let subordinate = in_list(SUBORDINATORS, l);
        if !(participle || subordinate) {
            break;
        }
        // A word that both introduces and may be a subject ("There", "However" without a
        // comma) is only skipped when a comma follows.
        match all[i..].iter().position(|p| matches!(p, Piece::Comma)) {
            // A copula before the comma, with no relative word, subordinator or personal
            // pronoun before it ([`opens_the_clause`]), shows the phrase was the subject:
            // a title ("Along the River During the Qingming Festival is …", "On the Road
            // is …") or an opening with no comma ("During ancient times the Acropolis of
            // Athens was …, after …"). "There are two species, …" is read as before.
            Some(c)
                if !subordinate
                    && !matches!(l, "there" | "here")
                    && opens_the_clause(&all[i + 1..i + c]) =>
            {
                break;
            }
            Some(c) => i += c + 1,
            None if subordinate => return Err("a subordinate clause with no main clause"),
            None if l.ends_with("ed") || l.ends_with("ing") || l == "born" || adverb_participle => {
                return Err("a participle phrase with no main clause");
            }
            None => break,
        }
    }
    Ok(i)
}

/// Whether the words after an introducer, up to its comma, hold a copula or auxiliary
/// that no relative or subordinating word or personal pronoun comes before ("By the time
/// he was finishing …," is a clause of its own): then they are the main clause.
fn opens_the_clause(phrase: &[Piece<'_>]) -> bool {
    for p in phrase {
        if let Piece::Word(w) = p {
            let l = w.lower.as_str();
            if in_list(RELATIVES, l)
                || in_list(SUBORDINATORS, l)
                || in_list(PERSONAL, l)
                || l == "that"
            {
                return false;
            }
            if in_list(AUXILIARIES, l) {
                return true;
            }
        }
    }
    false
}

/// The main clause's words, with non-restrictive relative clauses (", which …,") left out.
struct Clause<'p, 'a> {
    words: Vec<&'p Word<'a>>,
    /// Whether each word follows a comma directly.
    after_comma: Vec<bool>,
    /// Where the head of the opening noun phrase ends: at its first comma or relative
    /// pronoun.
    head_end: Option<usize>,
}

fn main_clause<'p, 'a>(all: &'p [Piece<'a>], start: usize) -> Clause<'p, 'a> {
    let mut words: Vec<&Word<'_>> = Vec::new();
    let mut after_comma: Vec<bool> = Vec::new();
    let mut comma = false;
    let mut head_end: Option<usize> = None;
    let mut k = start;
    while k < all.len() {
        match &all[k] {
            Piece::Comma => {
                comma = true;
                head_end.get_or_insert(words.len());
                if let Some(Piece::Word(w)) = all.get(k + 1)
                    && in_list(RELATIVES, &w.lower)
                {
                    // Skip to the clause's closing comma (or the end).
                    let close = all[k + 1..]
                        .iter()
                        .position(|p| matches!(p, Piece::Comma))
                        .map_or(all.len(), |c| k + 1 + c);
                    k = close + 1;
                    // The word after the clause continues the main clause.
                    comma = false;
                    continue;
                }
            }
            Piece::Word(w) => {
                if in_list(RELATIVES, &w.lower) && !words.is_empty() {
                    head_end.get_or_insert(words.len());
                }
                words.push(w);
                after_comma.push(std::mem::take(&mut comma));
            }
        }
        k += 1;
    }
    Clause {
        words,
        after_comma,
        head_end,
    }
}

/// Where the opening noun phrase ends, before the finite verb at `v`: adverbs before the
/// verb belong to the verb ("Marie Curie never won …").
fn subject_end(words: &[&Word<'_>], v: usize) -> usize {
    let mut np_end = v;
    while np_end > 1 && {
        let l = words[np_end - 1].lower.as_str();
        in_list(ADVERBS, l) || (l.ends_with("ly") && !capitalised(words[np_end - 1]))
    } {
        np_end -= 1;
    }
    np_end
}

/// How the head of the opening noun phrase opens the statement.
fn head_opening(text: &str, head: &[&Word<'_>]) -> Opening {
    let phrase = || {
        let last = head[head.len() - 1];
        text[head[0].at..last.at + last.text.len()].to_owned()
    };
    let first = head[0].lower.as_str();
    // A name anywhere in the head, the first word excepted (sentences open capitalised).
    // A figure before a noun names nothing ("The 1968 film"); one that opens or ends the
    // phrase does ("2001: A Space Odyssey", "the film 2001").
    let named = head[1..].iter().any(|w| capitalised(w))
        || figure(head[0])
        || (head.len() > 1 && figure(head[head.len() - 1]));
    let pointing = head.iter().any(|w| in_list(POINTING, &w.lower));
    if !named && in_list(PRONOUNS, first) && head.len() == 1 {
        Opening::Pronoun(phrase())
    } else if !named && (in_list(POINTING, first) || (pointing && in_list(QUANTIFIERS, first))) {
        // "This method", "Its plot", "Many of these works".
        Opening::Pointing(phrase())
    } else if !named && in_list(PRONOUNS, first) {
        // "It also …", "They all …".
        Opening::Pronoun(phrase())
    } else if first == "the" && !named && bare_definite(head) {
        Opening::Definite(phrase())
    } else {
        Opening::Subject
    }
}

/// A subject that holds a possessive or pronoun with no name before it for it to stand
/// for: "The first six of its twelve books" leans on the text before as "Its plot" does.
fn unanchored_pronoun(text: &str, np_words: &[&Word<'_>], np: (usize, usize)) -> Opening {
    let anchored = |before: &[&Word]| {
        before.iter().enumerate().any(|(i, w)| {
            capitalised(w)
                && (i > 0
                    || !(matches!(w.lower.as_str(), "the" | "a" | "an")
                        || in_list(QUANTIFIERS, &w.lower)
                        || in_list(POINTING, &w.lower)))
        })
    };
    match np_words.iter().position(|w| in_list(PERSONAL, &w.lower)) {
        Some(p) if !anchored(&np_words[..p]) => Opening::Pointing(text[np.0..np.1].to_owned()),
        _ => Opening::Subject,
    }
}

/// The main verb, lowercased: the finite verb at `v`, or the participle an auxiliary
/// carries; a bare form of "to be" is "be".
fn main_verb(words: &[&Word<'_>], v: usize) -> String {
    let finite = words[v].lower.as_str();
    let carried = in_list(AUXILIARIES, finite)
        .then(|| {
            words[v + 1..].iter().take(3).find(|w| {
                inflected_verb(&w.lower) || (w.lower.len() > 4 && w.lower.ends_with("ed"))
            })
        })
        .flatten();
    match carried {
        Some(w) => w.lower.clone(),
        None if matches!(finite, "is" | "are" | "was" | "were" | "am") => "be".to_owned(),
        None => finite.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pronoun_inside_the_opening_with_no_name_before_it_points_back() {
        for s in [
            "The first six of its twelve books tell the story of Aeneas.",
            "Another well-known book is the Garima Gospels.",
        ] {
            assert!(
                matches!(opening(s), Opening::Pointing(_)),
                "{s}: {:?}",
                opening(s)
            );
        }
        for s in [
            "Marie Curie and her husband shared the prize.",
            "The Aeneid and its twelve books tell the story of Aeneas.",
        ] {
            assert_eq!(opening(s), Opening::Subject, "{s}");
        }
    }

    #[test]
    fn an_unfinished_statement_is_seen() {
        assert_eq!(
            unfinished("The Act is an activity in which an actor adopts a character...").as_deref(),
            Some("an ellipsis")
        );
        assert_eq!(
            unfinished("The Acrobats is performed by the acrobatic skills that are ").as_deref(),
            Some("\"are\"")
        );
        assert_eq!(unfinished("Marie Curie was a physicist."), None);
        assert_eq!(unfinished("It is what it is."), None);
        assert_eq!(
            unfinished("Paris is where the government is"),
            Some("\"is\"".to_owned())
        );
    }

    #[test]
    fn a_demonstrative_inside_points_back() {
        for (statement, phrase) in [
            (
                "Jazz and ethnic folk music became important influences on many composers during this century.",
                "this century",
            ),
            (
                "Key figures in the New York School, which was the center of this movement, included Jackson Pollock.",
                "this movement",
            ),
            (
                "Its réalisateurs used these réseaux often.",
                "these réseaux",
            ),
            (
                "Minimalism started later in the century and can be seen as a change.",
                "the century",
            ),
        ] {
            assert_eq!(
                points_back_inside(statement).as_deref(),
                Some(phrase),
                "{statement}"
            );
        }
        for statement in [
            "Marie Curie won the Nobel Prize in Physics in 1903.",
            "This Is Us is an American television series.",
            "The album was named after the song This Must Be the Place.",
            "Paris is the city this is about.",
        ] {
            assert_eq!(points_back_inside(statement), None, "{statement}");
        }
    }

    fn opening(s: &str) -> Opening {
        read(s).opening
    }

    fn np(s: &str) -> &str {
        let r = read(s);
        &s[r.np.0..r.np.1]
    }

    #[test]
    fn named_subjects_are_standalone() {
        for s in [
            "The Academy Awards are awards for artistic and technical merit in film.",
            "Carmen is an opera in four acts by the French composer Georges Bizet.",
            "Electrons carry a negative charge.",
            "Bizet died suddenly after the 33rd performance.",
            "In archaeology, cave paintings are a type of parietal art.",
            "The Harbor Bridge opened in 1932 after eight years of construction.",
            "Maria Lindqvist designed the Harbor Bridge.",
            "Socotra, locally known as Saqatri, is a Yemeni island in the Indian Ocean.",
            "Modernism, impressionism, and post-romanticism can all be traced to the decades before.",
            "2001: A Space Odyssey stars Keir Dullea and Gary Lockwood.",
            "The acrobatics of China are famous.",
            "Directed by Stanley Kubrick, the 1968 film 2001 was a success.",
            // An opening phrase with no comma of its own, and titles that open like one.
            "During ancient times the Acropolis of Athens was known as Cecropia, after Cecrops.",
            "On the Road is a 1957 novel by Jack Kerouac, inspired by his travels.",
            "Along the River During the Qingming Festival is a handscroll, copied many times.",
            "By the time he was finishing the novel, Tolstoy was in an anguished state of mind.",
        ] {
            assert_eq!(opening(s), Opening::Subject, "{s}");
        }
    }

    #[test]
    fn a_phrase_with_its_comma_is_skipped_to_the_subject_after_it() {
        assert_eq!(
            opening("Along with the Psittacoidea, they make up the order Psittaciformes."),
            Opening::Pronoun("they".into())
        );
        assert_eq!(
            opening("Together with sloths, they are within the order Pilosa."),
            Opening::Pronoun("they".into())
        );
        assert_eq!(
            opening("Except in one book, the protagonists are all children."),
            Opening::Definite("the protagonists".into())
        );
        assert_eq!(np("In 1968, Kubrick released the film."), "Kubrick");
    }

    #[test]
    fn pointing_subjects_are_not() {
        assert_eq!(
            opening("It reached its apogee in the 19th century."),
            Opening::Pronoun("It".into())
        );
        assert_eq!(
            opening("This method extended its influence throughout the Western world."),
            Opening::Pointing("This method".into())
        );
        assert_eq!(
            opening("The film stars Keir Dullea and Gary Lockwood."),
            Opening::Definite("The film".into())
        );
        assert_eq!(
            opening("The term was first applied to American art in 1946."),
            Opening::Definite("The term".into())
        );
        assert_eq!(
            opening("Its plot was inspired by several short stories."),
            Opening::Pointing("Its plot".into())
        );
        assert!(read("They are presented annually by the Academy.").refers_back());
        assert!(read("In 1940, he and Joe Simon created Captain America.").refers_back());
        assert!(read("Nicknamed the City of the Sun, formerly known as Thebes.").refers_back());
        assert!(!read("Carmen is an opera by Georges Bizet.").refers_back());
        assert_eq!(
            opening("The 1968 film stars Keir Dullea."),
            Opening::Definite("The 1968 film".into())
        );
    }

    #[test]
    fn fragments_have_no_main_clause() {
        for s in [
            "Although acrobatics is most commonly associated with human body performance.",
            "Directed by Stanley Kubrick.",
            "Key figures in the New York School.",
            "Born in Ulm in 1879.",
        ] {
            assert!(
                matches!(opening(s), Opening::NoMainClause(_)),
                "{s}: {:?}",
                opening(s)
            );
        }
    }

    #[test]
    fn the_opening_noun_phrase_is_what_comes_before_the_verb() {
        assert_eq!(
            np("The Academy Awards are awards based on merit in film."),
            "The Academy Awards"
        );
        assert_eq!(
            np("The bridge, which Maria Lindqvist designed, opened in 1932."),
            "The bridge"
        );
        assert_eq!(
            opening("The bridge, which Maria Lindqvist designed, opened in 1932."),
            Opening::Definite("The bridge".into())
        );
        assert_eq!(
            np("Georges Seurat's A Sunday Afternoon is his most famous work."),
            "Georges Seurat's A Sunday Afternoon"
        );
    }
}
