//! The labelled question set (`tests/data/questions.json`) as the tests and the bench read
//! it: its questions with their gold documents and sentences, and the rule that picks its
//! corpus from the summaries file.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct QuestionSet {
    pub corpus: CorpusRule,
    pub questions: Vec<Question>,
}

/// Every `every`-th summary of the file, from `offset`, in file order.
#[derive(Debug, Deserialize)]
pub struct CorpusRule {
    pub every: usize,
    pub offset: usize,
}

#[derive(Debug, Deserialize)]
pub struct Question {
    pub id: String,
    /// `answerable`, `unanswerable` or `disagreement`.
    pub kind: String,
    pub question: String,
    pub gold: Vec<Gold>,
    /// The answer a reader of the gold sentence gives (none for an unanswerable one).
    #[serde(default)]
    pub answer: Option<String>,
}

/// A gold source: the document's title as stored and the sentence that answers.
#[derive(Debug, Deserialize)]
pub struct Gold {
    pub title: String,
    pub sentence: String,
}

impl QuestionSet {
    pub fn load(path: &Path) -> Result<QuestionSet> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a question set", path.display()))
    }

    /// The (title, text) documents the set's corpus rule picks from a summaries file (a
    /// JSON object of `{"title", "extract"}` in file order).
    pub fn corpus(&self, summaries: &Path) -> Result<Vec<(String, String)>> {
        if self.corpus.every == 0 {
            bail!("corpus.every is 0");
        }
        let bytes =
            std::fs::read(summaries).with_context(|| format!("reading {}", summaries.display()))?;
        let all: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&bytes)?;
        all.values()
            .enumerate()
            .filter(|(i, _)| i % self.corpus.every == self.corpus.offset)
            .map(|(_, v)| {
                let field = |k: &str| {
                    v[k].as_str()
                        .map(str::to_owned)
                        .with_context(|| format!("a summary without a string {k:?}"))
                };
                Ok((field("title")?, field("extract")?))
            })
            .collect()
    }
}
