//! The response contracts: what the model is asked to return, and the bounds the gate
//! enforces.
//!
//! Each contract is a JSON Schema document kept as a file beside this crate and sent to
//! the model server as `response_format`. Its sha256 is over the file's exact bytes and is
//! recorded with every model call; `tests::schema_hashes_are_pinned` fails when a schema
//! changes without a version bump. The bounds below are mirrored into the schema
//! (`maxLength`, `maxItems`): grammar-constrained servers stop on their own when they see
//! them, and `tests::schemas_mirror_the_bounds` keeps the two in step.

use sha2::{Digest, Sha256};

use crate::task::Task;

/// Bounds of the response contracts. Lengths are in Unicode scalar values (what JSON
/// Schema's `maxLength` counts), never bytes.
pub mod bounds {
    /// Whole response body, in bytes, before any fence is removed.
    pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
    /// JSON nesting the decoder follows before calling the response `not_json`. The
    /// contracts need 3 levels; the margin is for servers that wrap, never for content.
    pub const MAX_DEPTH: usize = 32;

    pub const MAX_ENTITIES: usize = 50;
    pub const MAX_CLAIMS: usize = 50;
    pub const MAX_RELATIONS: usize = 50;

    pub const NAME_MAX_CHARS: usize = 200;
    pub const STATEMENT_MAX_CHARS: usize = 1_000;
    pub const QUOTE_MAX_CHARS: usize = 2_000;

    /// "Too short to carry meaning". An entity name needs two characters ("EU", "Go");
    /// a statement needs a subject, a verb and an object — three words and twelve
    /// characters; a quote needs two words and eight characters, so a lone year or name
    /// (which would be found verbatim almost anywhere) cannot ground a claim.
    pub const NAME_MIN_CHARS: usize = 2;
    pub const STATEMENT_MIN_CHARS: usize = 12;
    pub const STATEMENT_MIN_WORDS: usize = 3;
    pub const QUOTE_MIN_CHARS: usize = 8;
    pub const QUOTE_MIN_WORDS: usize = 2;

    /// `relata.answer`: the prose, and the sources it may cite (a request sends at most
    /// `MAX_CITATIONS` sources).
    pub const ANSWER_MAX_CHARS: usize = 2_000;
    pub const MAX_CITATIONS: usize = 20;
    /// A source handle as sent (`S1` .. `S20`), with room for the model to be wrong in a
    /// way the gate names rather than the schema.
    pub const SOURCE_HANDLE_MAX_CHARS: usize = 8;
    /// "Too short to carry meaning" for an answer's prose: a subject, a verb and an object.
    pub const ANSWER_MIN_CHARS: usize = 12;
    pub const ANSWER_MIN_WORDS: usize = 3;
}

/// One response contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contract {
    pub task: Task,
    /// Stable id, e.g. `relata.extract`.
    pub schema_id: &'static str,
    pub version: u32,
    /// The `json_schema.name` sent to servers, e.g. `relata_extract_v1`.
    pub name: &'static str,
    /// The JSON Schema document, byte for byte as hashed.
    pub json_schema: &'static str,
}

pub const EXTRACT_V1: Contract = Contract {
    task: Task::Extract,
    schema_id: "relata.extract",
    version: 1,
    name: "relata_extract_v1",
    json_schema: include_str!("../schemas/relata.extract.v1.json"),
};

/// `relata.extract` v2: claims keyed by the handle of the chunk's sentence they state
/// (`S1`, `S2`, … as [`crate::sentences::handled`] numbers them), each a subject and a
/// statement or `null`; the quote is the sentence itself, so the model copies none. The
/// contract of `extract-p4` and `extract-p5`.
pub const EXTRACT_V2: Contract = Contract {
    task: Task::Extract,
    schema_id: "relata.extract",
    version: 2,
    name: "relata_extract_v2",
    json_schema: include_str!("../schemas/relata.extract.v2.json"),
};

/// `relata.extract` v3: v2, where a claim's statement may be `null` for "the sentence as
/// shown": the sentence's own text, or with the name written in where the prompt showed
/// it so ([`crate::referents::shown`]). A sentence that already reads alone costs the
/// model a subject and no copy. The contract of `extract-p7`.
pub const EXTRACT_V3: Contract = Contract {
    task: Task::Extract,
    schema_id: "relata.extract",
    version: 3,
    name: "relata_extract_v3",
    json_schema: include_str!("../schemas/relata.extract.v3.json"),
};

pub const CLASSIFY_V1: Contract = Contract {
    task: Task::Classify,
    schema_id: "relata.classify",
    version: 1,
    name: "relata_classify_v1",
    json_schema: include_str!("../schemas/relata.classify.v1.json"),
};

/// The exact prose of an abstention under `relata.answer` v1: the answering prompt asks
/// for this sentence, word for word, when the sources do not answer the question, and the
/// gate accepts no other prose with `found: false`.
pub const ANSWER_ABSTENTION: &str = "The sources do not answer this question.";

pub const ANSWER_V1: Contract = Contract {
    task: Task::Answer,
    schema_id: "relata.answer",
    version: 1,
    name: "relata_answer_v1",
    json_schema: include_str!("../schemas/relata.answer.v1.json"),
};

/// `relata.answer` v2: v1's answer, citations and `found` under one key, `reply`. The
/// wrapper exists for the schema sent with `answer-p2`: it splits `reply` into two closed
/// branches (answered with at least one citation, or the abstention with none), which
/// OpenAI's strict mode takes only below the root. The gate judges `reply` as v1's root.
pub const ANSWER_V2: Contract = Contract {
    task: Task::Answer,
    schema_id: "relata.answer",
    version: 2,
    name: "relata_answer_v2",
    json_schema: include_str!("../schemas/relata.answer.v2.json"),
};

/// `relata.join` v1: whether two entities that no rule joins are one thing, with the
/// evidence — a sentence handle that was sent and words copied from it — that a person
/// reads before deciding. A verdict is a proposal, never a join (`relata entities
/// propose`).
pub const JOIN_V1: Contract = Contract {
    task: Task::Join,
    schema_id: "relata.join",
    version: 1,
    name: "relata_join_v1",
    json_schema: include_str!("../schemas/relata.join.v1.json"),
};

impl Contract {
    /// The current contract of a task: for `extract`, the default prompt's (an older
    /// prompt names its own contract).
    pub const fn current(task: Task) -> Contract {
        match task {
            Task::Extract => EXTRACT_V2,
            Task::Classify => CLASSIFY_V1,
            Task::Answer => ANSWER_V1,
            Task::Join => JOIN_V1,
        }
    }

    /// Lowercase hex sha256 of the schema document's bytes.
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(self.json_schema.as_bytes()))
    }

    /// The schema as a JSON value, for embedding in a request.
    pub fn schema_value(&self) -> serde_json::Value {
        // The documents are compiled in and checked by a test; failure here is a build bug.
        serde_json::from_str(self.json_schema).expect("compiled-in JSON Schema is valid JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::bounds::*;
    use super::*;
    use serde_json::Value;

    /// Changing a schema document changes its hash. If this test fails, you changed a
    /// contract: bump its version (new file, new constant) instead of editing v1 in place,
    /// so that stored provenance keeps meaning what it said.
    #[test]
    fn schema_hashes_are_pinned() {
        assert_eq!(
            EXTRACT_V1.sha256(),
            "e091285a51b54996c00e721360f1c14a4008e6cd211de16b5267ccaa190a7e0e",
            "relata.extract v1 changed without a version bump"
        );
        assert_eq!(
            EXTRACT_V2.sha256(),
            "d800ef18ea05be0d5656e6928048ae793b9d7a533ac1b492f7b9a6a91c9cf882",
            "relata.extract v2 changed without a version bump"
        );
        assert_eq!(
            EXTRACT_V3.sha256(),
            "85e3a02f61f5744f626d49eaab517c077fdccc0e0f1213527532eaa7a91a02ba",
            "relata.extract v3 changed without a version bump"
        );
        assert_eq!(
            CLASSIFY_V1.sha256(),
            "1e9759c211a802607f64ff3a285cca01c3e07e0961643b9777165ad866651a77",
            "relata.classify v1 changed without a version bump"
        );
        assert_eq!(
            ANSWER_V1.sha256(),
            "1fafaf7567a3287622ed16234c0fe2155362a77e131d69b0453d8009babb0e8f",
            "relata.answer v1 changed without a version bump"
        );
        assert_eq!(
            ANSWER_V2.sha256(),
            "89c121cbdfd1835d2790882cec3f39dab87d7f9948702daa76c719018e7a82a0",
            "relata.answer v2 changed without a version bump"
        );
        assert_eq!(
            JOIN_V1.sha256(),
            "9a612bd7132460292c8577178d7bce727e18daae7d9b1150a4b1bfbd4bdb173f",
            "relata.join v1 changed without a version bump"
        );
    }

    fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
        path.iter().fold(v, |v, k| &v[*k])
    }

    #[test]
    fn schemas_mirror_the_bounds() {
        let e = EXTRACT_V1.schema_value();
        let n = |p: &[&str]| at(&e, p).as_u64().unwrap() as usize;
        assert_eq!(n(&["properties", "entities", "maxItems"]), MAX_ENTITIES);
        assert_eq!(n(&["properties", "claims", "maxItems"]), MAX_CLAIMS);
        let ent = ["properties", "entities", "items", "properties"];
        let name: Vec<&str> = ent.iter().copied().chain(["name", "maxLength"]).collect();
        assert_eq!(n(&name), NAME_MAX_CHARS);
        let cl = ["properties", "claims", "items", "properties"];
        let p = |f: &'static str, k: &'static str| -> Vec<&'static str> {
            cl.iter().copied().chain([f, k]).collect()
        };
        assert_eq!(n(&p("statement", "maxLength")), STATEMENT_MAX_CHARS);
        assert_eq!(n(&p("statement", "minLength")), STATEMENT_MIN_CHARS);
        assert_eq!(n(&p("quote", "maxLength")), QUOTE_MAX_CHARS);
        assert_eq!(n(&p("quote", "minLength")), QUOTE_MIN_CHARS);
        assert_eq!(n(&p("subject", "maxLength")), NAME_MAX_CHARS);

        let types: Vec<&str> = at(&e, &ent).get("type").unwrap()["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let ours: Vec<&str> = crate::EntityType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(types, ours);

        let c = CLASSIFY_V1.schema_value();
        assert_eq!(
            at(&c, &["properties", "relations", "maxItems"])
                .as_u64()
                .unwrap() as usize,
            MAX_RELATIONS
        );
        let rels: Vec<&str> = at(
            &c,
            &[
                "properties",
                "relations",
                "items",
                "properties",
                "relation",
                "enum",
            ],
        )
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
        let ours: Vec<&str> = crate::RelationKind::ALL
            .iter()
            .map(|t| t.as_str())
            .collect();
        assert_eq!(rels, ours);

        let e2 = EXTRACT_V2.schema_value();
        let n2 = |p: &[&str]| at(&e2, p).as_u64().unwrap() as usize;
        assert_eq!(n2(&["properties", "entities", "maxItems"]), MAX_ENTITIES);
        assert_eq!(n2(&["properties", "claims", "maxProperties"]), MAX_CLAIMS);
        let claim = &at(
            &e2,
            &["properties", "claims", "additionalProperties", "anyOf"],
        )[1];
        assert_eq!(
            at(claim, &["properties", "statement", "maxLength"]).as_u64(),
            Some(STATEMENT_MAX_CHARS as u64)
        );
        assert_eq!(
            at(claim, &["properties", "statement", "minLength"]).as_u64(),
            Some(STATEMENT_MIN_CHARS as u64)
        );
        assert_eq!(
            at(claim, &["properties", "subject", "maxLength"]).as_u64(),
            Some(NAME_MAX_CHARS as u64)
        );
        assert_eq!(
            at(
                &e2,
                &["properties", "entities", "items", "properties", "type"]
            ),
            at(&e, &ent).get("type").unwrap()
        );

        // v3 is v2 but for a statement that may be null.
        let e3 = EXTRACT_V3.schema_value();
        let claim3 = &at(
            &e3,
            &["properties", "claims", "additionalProperties", "anyOf"],
        )[1];
        let written = &at(claim3, &["properties", "statement", "anyOf"]);
        assert_eq!(&written[0], at(claim, &["properties", "statement"]));
        assert_eq!(written[1], serde_json::json!({"type": "null"}));
        assert_eq!(
            at(claim3, &["properties", "subject"]),
            at(claim, &["properties", "subject"])
        );
        assert_eq!(
            at(&e3, &["properties", "entities"]),
            at(&e2, &["properties", "entities"])
        );

        let a = ANSWER_V1.schema_value();
        let n = |p: &[&str]| at(&a, p).as_u64().unwrap() as usize;
        assert_eq!(n(&["properties", "answer", "maxLength"]), ANSWER_MAX_CHARS);
        assert_eq!(n(&["properties", "citations", "maxItems"]), MAX_CITATIONS);
        assert_eq!(
            n(&["properties", "citations", "items", "maxLength"]),
            SOURCE_HANDLE_MAX_CHARS
        );
        // v2's reply is v1's root, title and dialect keyword aside.
        let mut v1 = ANSWER_V1.schema_value();
        let v1 = v1.as_object_mut().unwrap();
        v1.remove("$schema");
        v1.remove("title");
        assert_eq!(
            at(&ANSWER_V2.schema_value(), &["properties", "reply"]),
            &Value::Object(v1.clone())
        );
    }

    /// An object either forbids unknown fields or names what its keys may be
    /// (`propertyNames`, v2's sentence handles) and what each holds.
    #[test]
    fn every_object_in_the_schemas_forbids_unknown_fields() {
        fn walk(v: &Value, path: String) {
            if let Some(o) = v.as_object() {
                if o.get("type") == Some(&Value::from("object")) {
                    let closed = o.get("additionalProperties") == Some(&Value::Bool(false));
                    let keyed = o.contains_key("propertyNames")
                        && o.get("additionalProperties").is_some_and(Value::is_object);
                    assert!(closed || keyed, "{path}");
                }
                for (k, child) in o {
                    walk(child, format!("{path}/{k}"));
                }
            }
        }
        walk(&EXTRACT_V1.schema_value(), String::new());
        walk(&EXTRACT_V2.schema_value(), String::new());
        walk(&EXTRACT_V3.schema_value(), String::new());
        walk(&CLASSIFY_V1.schema_value(), String::new());
        walk(&ANSWER_V1.schema_value(), String::new());
        walk(&ANSWER_V2.schema_value(), String::new());
    }
}
