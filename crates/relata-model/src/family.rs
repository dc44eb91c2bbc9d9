//! Which kind of server answers at the configured URL, read from its model list.
//!
//! Users point relata at OpenAI, vLLM, Ollama, llama.cpp's `llama-server`,
//! llama-cpp-python or a hosted "OpenAI-compatible" endpoint. They differ in the one
//! thing relata asks of them beyond chat: how structured output is requested and whether
//! it is enforced (measured in `tests/engines/` and with the real servers, the provider
//! table in docs/providers.md). `relata model probe` names the family it sees so that its
//! remedy fits that server, never one the server would ignore.

use crate::config::Dialect;

relata_core::closed_enum! {
    /// A server family, as `GET {url}/models` and its headers show it.
    pub enum ProviderFamily: "provider family" {
        /// api.openai.com: `json_schema` with `strict`, enforced (its documented subset).
        OpenAi = "openai",
        /// vLLM: `json_schema`, enforced by xgrammar or llguidance.
        Vllm = "vllm",
        /// Ollama: `json_schema`, compiled by llama.cpp's converter.
        Ollama = "ollama",
        /// llama.cpp's own server: `json_schema`, compiled by llama.cpp's converter;
        /// `json_object` with a schema is not enforced.
        LlamaServer = "llama-server",
        /// llama-cpp-python's server: `json_object` with a `schema`; answers
        /// `json_schema` with HTTP 500.
        LlamaCppPython = "llama-cpp-python",
        /// Anthropic's OpenAI-compatible endpoint: documents that it ignores
        /// `response_format`, so nothing is enforced.
        Anthropic = "anthropic",
        /// Something else (a proxy, a gateway, another server).
        Unknown = "unknown",
    }
}

impl ProviderFamily {
    /// The family a model list shows: `url` (the base URL), the `Server` header and the
    /// list's JSON body. The clearest mark wins: the host for hosted APIs, then what each
    /// server writes as `owned_by` (`llamacpp`, `vllm`, `library`, `me`), then headers.
    pub fn detect(url: &str, server_header: Option<&str>, body: &serde_json::Value) -> Self {
        let host = url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split(['/', ':']).next())
            .unwrap_or("")
            .to_ascii_lowercase();
        if host == "api.openai.com" {
            return ProviderFamily::OpenAi;
        }
        if host == "api.anthropic.com" {
            return ProviderFamily::Anthropic;
        }
        let first = body["data"].as_array().and_then(|d| d.first());
        let owned_by = first.and_then(|e| e["owned_by"].as_str()).unwrap_or("");
        match owned_by {
            "llamacpp" => return ProviderFamily::LlamaServer,
            "vllm" => return ProviderFamily::Vllm,
            "library" => return ProviderFamily::Ollama,
            "me" => return ProviderFamily::LlamaCppPython,
            "openai" | "system" | "openai-internal" => return ProviderFamily::OpenAi,
            _ => {}
        }
        if first.is_some_and(|e| e.get("display_name").is_some() && e["type"] == "model") {
            return ProviderFamily::Anthropic;
        }
        if first.is_some_and(|e| e.get("max_model_len").is_some()) {
            return ProviderFamily::Vllm;
        }
        match server_header.map(str::to_ascii_lowercase).as_deref() {
            Some(s) if s.starts_with("llama.cpp") => ProviderFamily::LlamaServer,
            _ => ProviderFamily::Unknown,
        }
    }

    /// The dialect this family takes and enforces; `None` when it enforces none or is not
    /// known.
    pub const fn dialect(self) -> Option<Dialect> {
        match self {
            ProviderFamily::OpenAi
            | ProviderFamily::Vllm
            | ProviderFamily::Ollama
            | ProviderFamily::LlamaServer => Some(Dialect::JsonSchema),
            ProviderFamily::LlamaCppPython => Some(Dialect::JsonObjectSchema),
            ProviderFamily::Anthropic | ProviderFamily::Unknown => None,
        }
    }

    /// Whether the family is known to ignore a schema it is sent.
    pub const fn ignores_response_format(self) -> bool {
        matches!(self, ProviderFamily::Anthropic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_family_is_told_by_what_its_list_shows() {
        let list =
            |owned: &str| json!({"object": "list", "data": [{"id": "m", "owned_by": owned}]});
        let u = "http://127.0.0.1:8080/v1";
        assert_eq!(
            ProviderFamily::detect(u, None, &list("llamacpp")),
            ProviderFamily::LlamaServer
        );
        assert_eq!(
            ProviderFamily::detect(u, None, &list("vllm")),
            ProviderFamily::Vllm
        );
        assert_eq!(
            ProviderFamily::detect(u, None, &list("library")),
            ProviderFamily::Ollama
        );
        assert_eq!(
            ProviderFamily::detect(u, None, &list("me")),
            ProviderFamily::LlamaCppPython
        );
        assert_eq!(
            ProviderFamily::detect("https://api.openai.com/v1", None, &list("system")),
            ProviderFamily::OpenAi
        );
        let anthropic =
            json!({"data": [{"type": "model", "id": "claude", "display_name": "Claude"}]});
        assert_eq!(
            ProviderFamily::detect(u, None, &anthropic),
            ProviderFamily::Anthropic
        );
        assert_eq!(
            ProviderFamily::detect(u, Some("llama.cpp"), &json!({})),
            ProviderFamily::LlamaServer
        );
        assert_eq!(
            ProviderFamily::detect(u, None, &list("someone")),
            ProviderFamily::Unknown
        );
    }

    #[test]
    fn dialects_follow_the_family() {
        assert_eq!(
            ProviderFamily::LlamaCppPython.dialect(),
            Some(Dialect::JsonObjectSchema)
        );
        assert_eq!(ProviderFamily::Ollama.dialect(), Some(Dialect::JsonSchema));
        assert!(ProviderFamily::Anthropic.ignores_response_format());
    }
}
