// dump_logits: llama.cpp (CPU) as an outside reference for our forward pass.
//
// Evaluates one token sequence with libllama and writes the logits of every
// position as a float32 .npy [n_ids, n_vocab]; optionally continues the
// sequence greedily. Built by tools/llamacpp/build.sh; see README.md there.
//
//   dump_logits -m MODEL.gguf --ids 1,2,3 -o out.npy
//   dump_logits -m MODEL.gguf --prompt "Once upon a time" --greedy 64 --text
//
// stdout, one labelled line each (so scripts can `sed -n 's/^greedy: //p'`):
//   ids: 1 403 ...      the evaluated sequence (always printed)
//   greedy: 9 8 ...     --greedy N: N argmax continuation ids
//   text: ...           --text: the pieces of ids + greedy, concatenated
//
// Choices that make the output a clean reference rather than a fast run:
//   - no BOS is added to --ids (the caller chooses); --prompt adds BOS;
//   - the KV cache is F32 by default (llama.cpp's default F16 cache would round
//     K and V, which is llama.cpp's storage choice, not the model's math);
//     --kv f16 restores llama.cpp's default;
//   - flash attention off, 1 thread by default;
//   - greedy = first index of the maximum logit, EOS is not special.
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Options {
    std::string model_path;
    std::vector<llama_token> ids;  // from --ids
    std::string prompt;            // from --prompt
    bool have_prompt = false;
    std::string out_path;          // -o; empty = no .npy
    int greedy = 0;                // --greedy N
    int threads = 1;
    bool kv_f16 = false;
    bool show_text = false;
    bool verbose = false;
};

[[noreturn]] void usage_error(const std::string& what) {
    throw std::runtime_error("dump_logits: " + what +
                             " (usage: dump_logits -m MODEL.gguf (--ids 1,2,3 | --prompt TEXT) "
                             "[-o OUT.npy] [--greedy N] [--text] [--threads N] [--kv f32|f16] [-v])");
}

// "1,2,3" or "1 2 3" -> ids. Rejects anything that is not a non-negative integer.
std::vector<llama_token> parse_ids(const std::string& text) {
    std::vector<llama_token> ids;
    std::string cur;
    auto flush = [&]() {
        if (cur.empty()) return;
        char* end = nullptr;
        long v = std::strtol(cur.c_str(), &end, 10);
        if (*end != '\0' || v < 0 || v > INT32_MAX) usage_error("bad token id '" + cur + "' in --ids");
        ids.push_back(static_cast<llama_token>(v));
        cur.clear();
    };
    for (char c : text) {
        if (c == ',' || c == ' ' || c == '\n' || c == '\t') flush();
        else cur += c;
    }
    flush();
    return ids;
}

int parse_int(const std::string& flag, const char* text) {
    char* end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (*end != '\0' || v < 0 || v > 1000000) usage_error("bad number '" + std::string(text) + "' for " + flag);
    return static_cast<int>(v);
}

Options parse_args(int argc, char** argv) {
    Options opt;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "-m" || a == "--model") opt.model_path = next();
        else if (a == "--ids") opt.ids = parse_ids(next());
        else if (a == "--prompt") { opt.prompt = next(); opt.have_prompt = true; }
        else if (a == "-o" || a == "--out") opt.out_path = next();
        else if (a == "--greedy") opt.greedy = parse_int(a, next());
        else if (a == "--threads") opt.threads = parse_int(a, next());
        else if (a == "--kv") {
            std::string kv = next();
            if (kv != "f32" && kv != "f16") usage_error("--kv must be f32 or f16, got '" + kv + "'");
            opt.kv_f16 = (kv == "f16");
        }
        else if (a == "--text") opt.show_text = true;
        else if (a == "-v" || a == "--verbose") opt.verbose = true;
        else usage_error("unknown argument '" + a + "'");
    }
    if (opt.model_path.empty()) usage_error("-m MODEL is required");
    if (opt.have_prompt == !opt.ids.empty()) usage_error("give exactly one of --ids and --prompt");
    if (opt.threads < 1) opt.threads = 1;
    return opt;
}

// Minimal .npy (format version 1.0): magic, header length, a Python-dict header
// padded with spaces to a 64-byte boundary and ended by '\n', then raw
// little-endian float32 in C order. x86-64 is little-endian, so we write as is.
void write_npy_f32(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                         std::to_string(cols) + "), }";
    const size_t prefix = 10;  // 6 magic + 2 version + 2 header length
    size_t total = prefix + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error("dump_logits: cannot open '" + path + "' for writing");
    const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    const uint16_t hlen = static_cast<uint16_t>(header.size());
    const unsigned char hlen_le[2] = {static_cast<unsigned char>(hlen & 0xff), static_cast<unsigned char>(hlen >> 8)};
    bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(hlen_le, 1, 2, f) == 2 &&
              std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
              std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) throw std::runtime_error("dump_logits: short write to '" + path + "'");
}

llama_token argmax(const float* logits, int n_vocab) {
    int best = 0;
    for (int i = 1; i < n_vocab; ++i)
        if (logits[i] > logits[best]) best = i;  // strict '>': ties keep the lowest id
    return best;
}

std::string piece(const llama_vocab* vocab, llama_token tok) {
    char buf[256];
    int n = llama_token_to_piece(vocab, tok, buf, sizeof(buf), 0, false);
    if (n < 0) throw std::runtime_error("dump_logits: piece of token " + std::to_string(tok) + " is too long");
    return std::string(buf, static_cast<size_t>(n));
}

// Silences llama.cpp's INFO chatter unless -v; warnings and errors still show.
void quiet_log(ggml_log_level level, const char* text, void* user) {
    bool verbose = *static_cast<bool*>(user);
    if (verbose || level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

// Holds what libllama hands out so every error path frees it.
struct Session {
    llama_model* model = nullptr;
    llama_context* ctx = nullptr;
    ~Session() {
        if (ctx) llama_free(ctx);
        if (model) llama_model_free(model);
    }
};

void print_ids(const char* label, const std::vector<llama_token>& ids) {
    std::printf("%s:", label);
    for (llama_token t : ids) std::printf(" %d", t);
    std::printf("\n");
}

int run(const Options& opt) {
    static bool verbose = false;
    verbose = opt.verbose;
    llama_log_set(quiet_log, &verbose);
    llama_backend_init();

    Session s;
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    s.model = llama_model_load_from_file(opt.model_path.c_str(), mp);
    if (!s.model) throw std::runtime_error("dump_logits: llama.cpp could not load '" + opt.model_path + "'");
    const llama_vocab* vocab = llama_model_get_vocab(s.model);
    const int n_vocab = llama_vocab_n_tokens(vocab);

    std::vector<llama_token> ids = opt.ids;
    if (opt.have_prompt) {
        // Tokenize with llama.cpp's own tokenizer; BOS first even if the vocab
        // metadata says not to add it, so the caller always gets BOS + text.
        std::vector<llama_token> buf(opt.prompt.size() + 8);
        int n = llama_tokenize(vocab, opt.prompt.data(), static_cast<int32_t>(opt.prompt.size()), buf.data(),
                               static_cast<int32_t>(buf.size()), true, false);
        if (n < 0) throw std::runtime_error("dump_logits: tokenizing --prompt failed (" + std::to_string(n) + ")");
        buf.resize(static_cast<size_t>(n));
        llama_token bos = llama_vocab_bos(vocab);
        if (buf.empty() || buf[0] != bos) buf.insert(buf.begin(), bos);
        ids = buf;
    }
    for (llama_token t : ids)
        if (t >= n_vocab)
            throw std::runtime_error("dump_logits: token id " + std::to_string(t) + " >= n_vocab " +
                                     std::to_string(n_vocab));
    const int n_ids = static_cast<int>(ids.size());

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(n_ids + opt.greedy + 16);
    cp.n_batch = static_cast<uint32_t>(n_ids);  // the whole sequence in one decode call...
    cp.n_ubatch = static_cast<uint32_t>(n_ids);  // ...and one physical batch
    cp.n_seq_max = 1;
    cp.n_threads = opt.threads;
    cp.n_threads_batch = opt.threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = opt.kv_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    cp.type_v = opt.kv_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    cp.no_perf = true;
    s.ctx = llama_init_from_model(s.model, cp);
    if (!s.ctx) throw std::runtime_error("dump_logits: llama_init_from_model failed");

    // One sequence (seq 0), positions 0..n-1, logits requested at every position.
    llama_batch batch = llama_batch_init(n_ids, 0, 1);
    for (int i = 0; i < n_ids; ++i) {
        batch.token[i] = ids[static_cast<size_t>(i)];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n_ids;
    int rc = llama_decode(s.ctx, batch);
    llama_batch_free(batch);
    if (rc != 0) throw std::runtime_error("dump_logits: llama_decode of the sequence returned " + std::to_string(rc));

    std::vector<float> logits(static_cast<size_t>(n_ids) * static_cast<size_t>(n_vocab));
    for (int i = 0; i < n_ids; ++i) {
        const float* row = llama_get_logits_ith(s.ctx, i);
        if (!row) throw std::runtime_error("dump_logits: no logits for position " + std::to_string(i));
        std::memcpy(&logits[static_cast<size_t>(i) * static_cast<size_t>(n_vocab)], row, sizeof(float) * n_vocab);
    }
    print_ids("ids", ids);
    if (!opt.out_path.empty())
        write_npy_f32(opt.out_path, logits, static_cast<size_t>(n_ids), static_cast<size_t>(n_vocab));

    // Greedy continuation: one token per decode call, like a real decode loop.
    std::vector<llama_token> greedy;
    if (opt.greedy > 0) {
        llama_token next = argmax(&logits[static_cast<size_t>(n_ids - 1) * static_cast<size_t>(n_vocab)], n_vocab);
        for (int k = 0; k < opt.greedy; ++k) {
            greedy.push_back(next);
            if (k + 1 == opt.greedy) break;  // the last token needs no forward pass
            llama_token tok = next;
            llama_batch one = llama_batch_init(1, 0, 1);
            one.token[0] = tok;
            one.pos[0] = n_ids + k;
            one.n_seq_id[0] = 1;
            one.seq_id[0][0] = 0;
            one.logits[0] = 1;
            one.n_tokens = 1;
            rc = llama_decode(s.ctx, one);
            llama_batch_free(one);
            if (rc != 0) throw std::runtime_error("dump_logits: llama_decode at greedy step " + std::to_string(k) +
                                                  " returned " + std::to_string(rc));
            next = argmax(llama_get_logits_ith(s.ctx, -1), n_vocab);
        }
        print_ids("greedy", greedy);
    }
    if (opt.show_text) {
        std::string text;
        for (llama_token t : ids) text += piece(vocab, t);
        for (llama_token t : greedy) text += piece(vocab, t);
        std::printf("text: %s\n", text.c_str());
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        int rc = run(parse_args(argc, argv));
        llama_backend_free();
        return rc;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
