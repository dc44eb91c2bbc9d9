// llama.cpp's own JSON Schema converter and grammar, as llama-server and Ollama run them,
// asked about relata's schemas: does a schema compile, and does the grammar it compiles
// to accept a conforming instance and refuse each violating one?
//
// Input (stdin), one JSON object per line:
//   {"id": "...", "schema": {...}, "accept": ["<json text>", ...], "reject": ["<json text>", ...]}
// Output (stdout), one JSON object per input line:
//   {"id": "...", "compiled": true|false, "error": "...", "accepted": [bool...], "refused": [bool...]}
//
// Built by scripts/engines/build-llama.sh beside llama-server, from the same llama.cpp
// source (the one vendored in the llama-cpp-python sdist), so that what it says is what
// that server does. The string matching follows llama.cpp's tests/test-grammar-integration.cpp.

#include "json-schema-to-grammar.h"
#include "json.h"

#include "../src/llama-grammar.h"
#include "../src/unicode.h"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

static bool match_string(const std::string & input, llama_grammar * grammar) {
    auto & stacks = llama_grammar_get_stacks(grammar);
    size_t offset = 0;
    while (offset < input.size()) {
        uint32_t cpt;
        try {
            cpt = unicode_cpt_from_utf8(input, offset);
        } catch (const std::invalid_argument &) {
            return false;
        }
        try {
            llama_grammar_accept_token(*grammar, 0, unicode_cpt_to_utf8(cpt));
        } catch (const std::runtime_error &) {
            return false;
        }
        if (stacks.empty()) {
            return false;
        }
    }
    for (const auto & stack : stacks) {
        if (stack.empty()) {
            return true;
        }
    }
    return false;
}

static std::string bools(const std::vector<bool> & v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); i++) {
        out += (i ? "," : "");
        out += v[i] ? "true" : "false";
    }
    return out + "]";
}

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) {
            continue;
        }
        common_json input = common_json::parse(line);
        const std::string id = input.at("id").get<std::string>();
        const common_json id_json = common_json::make(id);
        std::string grammar_text;
        std::string error;
        llama_grammar * grammar = nullptr;
        try {
            grammar_text = json_schema_to_grammar(input.at("schema"), true);
        } catch (const std::exception & e) {
            error = std::string("json_schema_to_grammar: ") + e.what();
        }
        if (error.empty()) {
            grammar = llama_grammar_init_impl(nullptr, grammar_text.c_str(), "root", false, nullptr, 0, nullptr, 0);
            if (grammar == nullptr) {
                error = "the grammar it produced does not parse";
            }
        }
        if (grammar == nullptr) {
            std::cout << "{\"id\":" << id_json.dump() << ",\"compiled\":false,\"error\":"
                      << common_json::make(error).dump() << "}" << std::endl;
            continue;
        }
        const llama_grammar_stacks initial = llama_grammar_get_stacks(grammar);
        std::vector<bool> accepted;
        std::vector<bool> refused;
        const common_json & accept = input.at("accept");
        for (size_t i = 0; i < accept.size(); i++) {
            llama_grammar_get_stacks(grammar) = initial;
            accepted.push_back(match_string(accept.at(i).get<std::string>(), grammar));
        }
        const common_json & reject = input.at("reject");
        for (size_t i = 0; i < reject.size(); i++) {
            llama_grammar_get_stacks(grammar) = initial;
            refused.push_back(!match_string(reject.at(i).get<std::string>(), grammar));
        }
        llama_grammar_free_impl(grammar);
        std::cout << "{\"id\":" << id_json.dump() << ",\"compiled\":true,\"accepted\":" << bools(accepted)
                  << ",\"refused\":" << bools(refused) << "}" << std::endl;
    }
    return 0;
}
