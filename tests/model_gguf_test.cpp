// GGUF reader and writer: real files made by llama.cpp (stories260K, vocab files), a writer ->
// reader round trip of every value type, and corrupted files that must fail with a clear ModelError.
#include <gtest/gtest.h>

#include "model/gguf.h"
#include "model/gguf_writer.h"
#include "model/model_file.h"
#include "model_test_util.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

// Byte offset of the u32 type field of tensor `name` in a GGUF file (walks its tensor-info entry).
size_t tensor_type_offset(const std::vector<uint8_t>& bytes, const std::string& name) {
  std::vector<uint8_t> pattern(8);
  const uint64_t len = name.size();
  std::memcpy(pattern.data(), &len, 8);
  pattern.insert(pattern.end(), name.begin(), name.end());
  auto it = std::search(bytes.begin(), bytes.end(), pattern.begin(), pattern.end());
  size_t pos = size_t(it - bytes.begin()) + pattern.size();
  uint32_t n_dims;
  std::memcpy(&n_dims, &bytes[pos], 4);
  return pos + 4 + 8 * n_dims;
}

// Copies stories260K-f32 through GgufWriter, letting `edit` change tensors on the way.
using TensorEdit = std::function<bool(const TensorView& t, GgufWriter& w)>;  // true: handled
void rewrite_stories(const std::string& out, const TensorEdit& edit, const std::string& arch = "llama") {
  auto src = GgufFile::open(kStories + "stories260K-f32.gguf");
  GgufWriter w;
  for (const auto& [key, value] : src->metadata()) w.set(key, value);
  w.set_string("general.architecture", arch);
  for (const TensorView& t : src->tensors()) {
    if (edit && edit(t, w)) continue;
    w.add_tensor(t.name, t.type, t.ne, std::vector<uint8_t>(t.data, t.data + t.nbytes));
  }
  w.write(out);
}

}  // namespace

TEST(Gguf, StoriesFilesParseWithTheRightConfig) {
  for (const char* file : {"stories260K-f32.gguf", "stories260K-Q8_0.gguf", "stories260K-Q4_0.gguf"}) {
    SCOPED_TRACE(file);
    auto m = open_model(kStories + file);
    const ModelConfig& c = m->config;
    EXPECT_EQ(c.arch, Arch::Llama);
    EXPECT_EQ(c.hidden_size, 64u);
    EXPECT_EQ(c.num_hidden_layers, 5u);
    EXPECT_EQ(c.num_attention_heads, 8u);
    EXPECT_EQ(c.num_key_value_heads, 4u);
    EXPECT_EQ(c.head_dim, 8u);
    EXPECT_EQ(c.rotary_dim, 8u);
    EXPECT_EQ(c.vocab_size, 512u);
    EXPECT_EQ(c.rope_style, RopeStyle::Normal);
    EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
    EXPECT_EQ(c.bos_token_id, 1);
    ASSERT_EQ(c.eos_token_ids.size(), 1u);
    EXPECT_EQ(c.eos_token_ids[0], 2);
    EXPECT_FALSE(c.qk_norm);
    EXPECT_FALSE(c.attn_bias);
    ASSERT_TRUE(m->gguf);
    EXPECT_EQ(m->gguf->version(), 3u);
    EXPECT_EQ(m->gguf->alignment(), 32u);
    EXPECT_EQ(m->gguf->tensors().size(), 48u);
    EXPECT_EQ(m->get("blk.4.ffn_down.weight").ne, (std::vector<uint64_t>{172, 64}));
    EXPECT_THROW(m->get("blk.5.ffn_down.weight"), ModelError);
  }
  // The checkpoint ties its LM head to the embedding; llama2c's converter stored it twice.
  auto m = open_model(kStories + "stories260K-f32.gguf");
  EXPECT_EQ(values(m->get("output.weight")), values(m->get("token_embd.weight")));
}

TEST(Gguf, MetadataGetters) {
  auto g = GgufFile::open(kStories + "stories260K-f32.gguf");
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->get_uint("llama.block_count"), 5u);
  EXPECT_EQ(g->get_int("llama.attention.head_count"), 8);
  EXPECT_DOUBLE_EQ(g->get_float("llama.embedding_length"), 64.0);  // integers read as numbers
  EXPECT_NEAR(g->get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
  EXPECT_EQ(g->get_uint("no.such.key", 7), 7u);
  EXPECT_FALSE(g->find_string("no.such.key").has_value());
  EXPECT_TRUE(g->has("tokenizer.ggml.tokens"));
  const auto tokens = g->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[g->get_uint("tokenizer.ggml.bos_token_id")], "<s>");
  EXPECT_EQ(g->get_float_array("tokenizer.ggml.scores").size(), 512u);
  EXPECT_EQ(g->get_int_array("tokenizer.ggml.token_type").size(), 512u);
  expect_model_error([&] { g->get_string("llama.block_count"); }, {"llama.block_count", "expected a string", "u32"});
  expect_model_error([&] { g->get_uint("general.name"); }, {"general.name", "unsigned integer", "string"});
  expect_model_error([&] { g->get_uint("missing.key"); }, {"missing metadata key 'missing.key'"});
  expect_model_error([&] { g->get_string_array("tokenizer.ggml.scores"); }, {"array of strings", "f32"});
  expect_model_error([&] { g->get_bool("llama.block_count"); }, {"bool"});
  // The printable summary shortens long arrays.
  const std::string summary = g->find_value("tokenizer.ggml.tokens")->summary();
  EXPECT_NE(summary.find("[string x 512]"), std::string::npos) << summary;
  EXPECT_LT(summary.size(), 200u);
}

TEST(Gguf, VocabFilesParse) {
  for (const char* name : {"gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2", "qwen35"}) {
    SCOPED_TRACE(name);
    auto g = GgufFile::open(kVocab + "ggml-vocab-" + name + ".gguf");
    const auto tokens = g->get_string_array("tokenizer.ggml.tokens");
    EXPECT_GT(tokens.size(), 30000u);
    EXPECT_EQ(g->get_int_array("tokenizer.ggml.token_type").size(), tokens.size());
    if (g->has("tokenizer.ggml.scores")) {
      EXPECT_EQ(g->get_float_array("tokenizer.ggml.scores").size(), tokens.size());
    }
    const std::string model = g->get_string("tokenizer.ggml.model");
    if (model == "gpt2") {
      EXPECT_GT(g->get_string_array("tokenizer.ggml.merges").size(), 10000u);
    }
    EXPECT_LT(g->get_uint("tokenizer.ggml.eos_token_id"), tokens.size());
    EXPECT_TRUE(g->tensors().empty());
    // Vocabulary-only: not a runnable model, and the error says why.
    const std::string arch = g->get_string("general.architecture");
    if (arch == "gpt2") {
      expect_model_error([&] { open_model(g->path()); }, {"unknown architecture 'gpt2'", "supported"});
    } else {
      expect_model_error([&] { open_model(g->path()); }, {"missing tensor token_embd.weight"});
    }
  }
}

TEST(Gguf, WriterReaderRoundTripEveryType) {
  TempDir dir;
  GgufWriter w;
  w.set("general.alignment", GgufValue::of_uint(GgufValueType::U32, 64));
  w.set("v.u8", GgufValue::of_uint(GgufValueType::U8, 255));
  w.set("v.i8", GgufValue::of_int(GgufValueType::I8, -128));
  w.set("v.u16", GgufValue::of_uint(GgufValueType::U16, 65535));
  w.set("v.i16", GgufValue::of_int(GgufValueType::I16, -32768));
  w.set_u32("v.u32", 4000000000u);
  w.set_i32("v.i32", -2000000000);
  w.set_u64("v.u64", 18000000000000000000ull);
  w.set("v.i64", GgufValue::of_int(GgufValueType::I64, -9000000000000000000ll));
  w.set_f32("v.f32", 0.1f);
  w.set("v.f64", GgufValue::of_float(GgufValueType::F64, 0.1));
  w.set_bool("v.bool", true);
  w.set_string("v.string", "h\xc3\xa9llo\nworld");
  w.set_string("v.empty", "");
  w.set_string_array("v.strings", {"a", "", "\xe2\x82\xac"});
  w.set_f32_array("v.floats", {1.5f, -2.25f});
  w.set_i32_array("v.ints", {});
  w.set("v.bools", GgufValue::of_ints(GgufValueType::Bool, {1, 0, 1}));
  w.set("v.nested", GgufValue::of_arrays({GgufValue::of_strings({"x", "y"}), GgufValue::of_ints(GgufValueType::U8, {7}),
                                          GgufValue::of_arrays({GgufValue::of_floats(GgufValueType::F64, {3.0})})}));
  w.set_u32("v.replaced", 1);
  w.set_u32("v.replaced", 2);  // replaces in place
  const std::vector<float> a = random_values(64 * 3, 1);
  w.add_tensor_f32("a", GgmlType::F32, {64, 3}, a);
  w.add_tensor_f32("b", GgmlType::Q8_0, {64, 3}, a);
  w.add_tensor_f32("c", GgmlType::F16, {5}, {1, 2, 3, 4, 5});
  w.add_tensor("d", GgmlType::I8, {3, 1, 1, 2}, std::vector<uint8_t>{1, 2, 3, 4, 5, 6});
  w.write(dir.file("rt.gguf"));

  auto g = GgufFile::open(dir.file("rt.gguf"));
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), 64u);
  EXPECT_EQ(g->data_offset() % 64, 0u);
  EXPECT_EQ(g->get_uint("v.u8"), 255u);
  EXPECT_EQ(g->get_int("v.i8"), -128);
  EXPECT_EQ(g->get_uint("v.u16"), 65535u);
  EXPECT_EQ(g->get_int("v.i16"), -32768);
  EXPECT_EQ(g->get_uint("v.u32"), 4000000000u);
  EXPECT_EQ(g->get_int("v.i32"), -2000000000);
  EXPECT_EQ(g->get_uint("v.u64"), 18000000000000000000ull);
  expect_model_error([&] { g->get_int("v.u64"); }, {"v.u64", "below 2^63"});
  expect_model_error([&] { g->get_uint("v.i8"); }, {"v.i8", "non-negative"});
  EXPECT_EQ(g->get_int("v.i64"), -9000000000000000000ll);
  EXPECT_EQ(g->get_float("v.f32"), double(0.1f));
  EXPECT_EQ(g->get_float("v.f64"), 0.1);
  EXPECT_TRUE(g->get_bool("v.bool"));
  EXPECT_EQ(g->get_string("v.string"), "h\xc3\xa9llo\nworld");
  EXPECT_EQ(g->get_string("v.empty"), "");
  EXPECT_EQ(g->get_string_array("v.strings"), (std::vector<std::string>{"a", "", "\xe2\x82\xac"}));
  EXPECT_EQ(g->get_float_array("v.floats"), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_TRUE(g->get_int_array("v.ints").empty());
  EXPECT_EQ(g->get_int_array("v.bools"), (std::vector<int64_t>{1, 0, 1}));
  const GgufValue* nested = g->find_value("v.nested");
  ASSERT_TRUE(nested);
  ASSERT_EQ(nested->items.size(), 3u);
  EXPECT_EQ(nested->items[0].strings, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(nested->items[1].ints, (std::vector<int64_t>{7}));
  EXPECT_EQ(nested->items[2].items[0].reals, (std::vector<double>{3.0}));
  EXPECT_EQ(g->get_uint("v.replaced"), 2u);
  EXPECT_EQ(g->metadata()[0].first, "general.alignment");  // insertion order kept

  ASSERT_EQ(g->tensors().size(), 4u);
  EXPECT_EQ(values(*g->find("a")), a);
  EXPECT_LT(nmse(values(*g->find("b")), a), 1e-4);
  EXPECT_EQ(values(*g->find("c")), (std::vector<float>{1, 2, 3, 4, 5}));
  const TensorView& d = *g->find("d");
  EXPECT_EQ(d.ne, (std::vector<uint64_t>{3, 1, 1, 2}));
  EXPECT_EQ(d.rows(), 2u);
  EXPECT_EQ(std::vector<uint8_t>(d.data, d.data + d.nbytes), (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
  for (const TensorView& t : g->tensors()) EXPECT_EQ((t.data - g->tensors()[0].data) % 64, 0) << t.name;

  // A byte-exact copy: writing what we read gives the same file.
  GgufWriter w2;
  for (const auto& [key, value] : g->metadata()) w2.set(key, value);
  for (const TensorView& t : g->tensors()) w2.add_tensor(t.name, t.type, t.ne, std::vector<uint8_t>(t.data, t.data + t.nbytes));
  w2.write(dir.file("rt2.gguf"));
  EXPECT_EQ(read_bytes(dir.file("rt.gguf")), read_bytes(dir.file("rt2.gguf")));
}

TEST(Gguf, WriterRejectsBadTensors) {
  GgufWriter w;
  expect_model_error([&] { w.add_tensor_f32("x", GgmlType::Q4_K, {64, 2}, std::vector<float>(128)); }, {"x", "256"});
  expect_model_error([&] { w.add_tensor_f32(std::string(64, 'n'), GgmlType::F32, {1}, {0}); }, {"63"});
  w.add_tensor_f32("y", GgmlType::F32, {1}, {0});
  expect_model_error([&] { w.add_tensor_f32("y", GgmlType::F32, {1}, {0}); }, {"'y'", "twice"});
}

// Every prefix of the file is an error (the last tensor ends at the end of the file), never a crash.
TEST(Gguf, TruncatedFilesFail) {
  TempDir dir;
  const std::vector<uint8_t> bytes = read_bytes(kStories + "stories260K-f32.gguf");
  std::vector<size_t> cuts = {0, 3, 4, 7, 8, 15, 16, 23, 24, 30, bytes.size() - 1, bytes.size() - 4096};
  for (size_t n = 25; n < 20000; n += 97) cuts.push_back(n);  // through metadata and tensor infos
  for (size_t n = 20000; n < bytes.size(); n += 40009) cuts.push_back(n);
  for (size_t n : cuts) {
    const std::string path = dir.file("cut.gguf");
    write_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(n)));
    try {
      GgufFile::open(path);
      ADD_FAILURE() << "truncated at " << n << ": no error";
    } catch (const ModelError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_TRUE(msg.find("truncated") != std::string::npos || msg.find("not a GGUF") != std::string::npos ||
                  msg.find("exceeds") != std::string::npos || msg.find("more than") != std::string::npos)
          << "cut " << n << ": " << msg;
    }
  }
}

TEST(Gguf, CorruptHeadersFail) {
  TempDir dir;
  const std::vector<uint8_t> good = read_bytes(kStories + "stories260K-f32.gguf");
  auto check = [&](const std::string& what, const std::function<void(std::vector<uint8_t>&)>& corrupt,
                   std::initializer_list<const char*> words) {
    std::vector<uint8_t> bytes = good;
    corrupt(bytes);
    const std::string path = dir.file(what + ".gguf");
    write_bytes(path, bytes);
    expect_model_error([&] { open_model(path); }, words, what);
  };
  auto put32 = [](std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); };
  auto put64 = [](std::vector<uint8_t>& b, size_t at, uint64_t v) { std::memcpy(&b[at], &v, 8); };
  const size_t type_at = tensor_type_offset(good, "blk.3.attn_q.weight");

  check("magic", [](auto& b) { b[3] = 'E'; }, {"not a GGUF file", "'GGUE'"});
  check("version1", [&](auto& b) { put32(b, 4, 1); }, {"version 1", "expected 2 or 3"});
  check("version9", [&](auto& b) { put32(b, 4, 9); }, {"version 9"});
  check("tensor_count", [&](auto& b) { put64(b, 8, 1ull << 40); }, {"tensors", "more than"});
  check("kv_count", [&](auto& b) { put64(b, 16, 1ull << 40); }, {"metadata keys"});
  check("key_length", [&](auto& b) { put64(b, 24, 1ull << 50); }, {"truncated", "metadata key"});
  check("value_type", [&](auto& b) { put32(b, 24 + 8 + 21, 77); }, {"tokenizer.ggml.tokens", "unknown value type 77"});
  check("array_count", [&](auto& b) { put64(b, 24 + 8 + 21 + 4 + 4, 1ull << 60); }, {"tokenizer.ggml.tokens", "exceeds"});
  check("tensor_type", [&](auto& b) { put32(b, type_at, 99); }, {"blk.3.attn_q.weight", "unknown tensor type id 99"});
  check("tensor_offset", [&](auto& b) { put64(b, type_at + 4, 1ull << 40); },
        {"blk.3.attn_q.weight", "past the end of the file"});
  check("tensor_unaligned", [&](auto& b) { put64(b, type_at + 4, 36); }, {"blk.3.attn_q.weight", "alignment 32"});
  check("tensor_dims", [&](auto& b) { put32(b, type_at - 4 - 16, 5); }, {"blk.3.attn_q.weight", "dimensions, got 5"});
}

TEST(Gguf, ModelLevelErrors) {
  TempDir dir;
  rewrite_stories(dir.file("mamba.gguf"), {}, "mamba");
  expect_model_error([&] { open_model(dir.file("mamba.gguf")); },
                     {"mamba.gguf", "unknown architecture 'mamba'", "llama, qwen2, qwen3, phi3"});

  rewrite_stories(dir.file("shape.gguf"), [](const TensorView& t, GgufWriter& w) {
    if (t.name != "blk.3.attn_q.weight") return false;
    w.add_tensor_f32(t.name, GgmlType::F32, {64, 32}, std::vector<float>(64 * 32));
    return true;
  });
  expect_model_error([&] { open_model(dir.file("shape.gguf")); },
                     {"shape.gguf", "tensor blk.3.attn_q.weight: expected shape [64, 64], got [64, 32]"});

  rewrite_stories(dir.file("missing.gguf"), [](const TensorView& t, GgufWriter&) { return t.name == "blk.2.ffn_norm.weight"; });
  expect_model_error([&] { open_model(dir.file("missing.gguf")); }, {"missing tensor blk.2.ffn_norm.weight", "[64]"});

  rewrite_stories(dir.file("q8_1.gguf"), [](const TensorView& t, GgufWriter& w) {
    if (t.name != "blk.0.ffn_up.weight") return false;
    w.add_tensor(t.name, GgmlType::Q8_1, t.ne, std::vector<uint8_t>(row_bytes(GgmlType::Q8_1, 64) * 172));
    return true;
  });
  expect_model_error([&] { open_model(dir.file("q8_1.gguf")); }, {"blk.0.ffn_up.weight", "type Q8_1 is not supported"});
  // The file itself is fine: the reader lists Q8_1 tensors (for `ztvm info`), only the model refuses.
  EXPECT_EQ(GgufFile::open(dir.file("q8_1.gguf"))->find("blk.0.ffn_up.weight")->type, GgmlType::Q8_1);

  write_bytes(dir.file("empty.gguf"), {});
  expect_model_error([&] { open_model(dir.file("empty.gguf")); }, {"not a GGUF file", "0 bytes"});
  expect_model_error([&] { open_model(dir.file("does-not-exist.gguf")); }, {"does-not-exist.gguf", "cannot open"});
}

// v2 has the v3 layout (v3 only added big-endian files); bad alignments are rejected.
TEST(Gguf, Version2AndAlignmentKey) {
  TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.add_tensor_f32("t", GgmlType::F32, {8}, std::vector<float>(8, 1.f));
  w.write(dir.file("v3.gguf"));
  std::vector<uint8_t> bytes = read_bytes(dir.file("v3.gguf"));
  bytes[4] = 2;
  write_bytes(dir.file("v2.gguf"), bytes);
  auto g = GgufFile::open(dir.file("v2.gguf"));
  EXPECT_EQ(g->version(), 2u);
  EXPECT_EQ(values(*g->find("t")), std::vector<float>(8, 1.f));

  GgufWriter bad;
  EXPECT_THROW(bad.set("general.alignment", GgufValue::of_uint(GgufValueType::U32, 48)), ModelError);
  // A file whose alignment key is not a power of two (written by patching a valid one).
  GgufWriter w2;
  w2.set_u32("general.alignment", 64);
  w2.write(dir.file("a64.gguf"));
  bytes = read_bytes(dir.file("a64.gguf"));
  const size_t at = 24 + 8 + 17 + 4;  // header, key length, "general.alignment", type: the u32 value
  ASSERT_EQ(bytes[at], 64);
  bytes[at] = 48;
  write_bytes(dir.file("a48.gguf"), bytes);
  expect_model_error([&] { GgufFile::open(dir.file("a48.gguf")); }, {"general.alignment", "power of two", "48"});
}

// Random byte mutations of the header region: every outcome is a loaded model or a ModelError.
TEST(Gguf, RandomMutationsNeverCrash) {
  TempDir dir;
  const std::vector<uint8_t> good = read_bytes(kStories + "stories260K-Q4_0.gguf");
  auto g = GgufFile::open(kStories + "stories260K-Q4_0.gguf");
  const size_t header = g->data_offset();
  std::mt19937 rng(2024);
  int errors = 0, loaded = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<uint8_t> bytes = good;
    const int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      // Half the mutations hit the fixed header and the tensor infos at the end of the header,
      // where counts, types and offsets live; the rest land anywhere before the data.
      const size_t at = (k % 2) ? rng() % header : (rng() % 2 ? rng() % 32 : header - 1 - rng() % 1500);
      bytes[at] = uint8_t(rng());
    }
    const std::string path = dir.file("mut.gguf");
    write_bytes(path, bytes);
    try {
      open_model(path);
      ++loaded;
    } catch (const ModelError&) {
      ++errors;
    }
  }
  std::printf("  400 mutated files: %d ModelError, %d still loadable\n", errors, loaded);
  EXPECT_GT(errors, 100);
}

// A GGUF split into parts (llama.cpp's gguf-split layout) opens from any part as the whole model:
// the same config and the same tensor bytes as the single file; a missing or foreign part is an
// error that names it.
TEST(Gguf, SplitFilesOpenAsOneModel) {
  TempDir dir;
  const std::string single = kStories + "stories260K-Q8_0.gguf";
  const std::vector<std::string> parts = split_gguf(single, dir.file("s"), 3);
  auto whole = open_model(single);
  // Reversed, the token embedding (which gives the vocabulary) is in the last part, not the first.
  const std::vector<std::string> back = split_gguf(single, dir.file("r"), 2, true);
  ASSERT_EQ(GgufFile::open(back[0])->find("token_embd.weight"), nullptr);
  for (const std::string& from : {parts[0], parts[2], back[0]}) {
    auto m = open_model(from);
    EXPECT_EQ(m->path, from == back[0] ? back[0] : parts[0]);
    EXPECT_EQ(m->gguf_parts.size(), from == back[0] ? 1u : 2u);
    EXPECT_EQ(m->config.vocab_size, whole->config.vocab_size);
    EXPECT_EQ(m->config.tie_word_embeddings, whole->config.tie_word_embeddings);
    EXPECT_EQ(m->config.num_hidden_layers, whole->config.num_hidden_layers);
    ASSERT_EQ(m->tensors.size(), whole->tensors.size());
    for (const auto& [name, t] : whole->tensors) {
      const TensorView& s = m->get(name);
      ASSERT_EQ(s.nbytes, t.nbytes) << name;
      EXPECT_EQ(std::memcmp(s.data, t.data, t.nbytes), 0) << name;
    }
  }
  // The parts really divide the tensors: the last part's first one is not in the first part.
  const std::string last_first = GgufFile::open(parts[2])->tensors().at(0).name;
  EXPECT_EQ(GgufFile::open(parts[0])->find(last_first), nullptr);
  fs::rename(parts[1], dir.file("away.gguf"));
  try {
    open_model(parts[0]);
    FAIL() << "a part is missing";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("part 2 of 3 is missing"), std::string::npos) << e.what();
  }
  fs::copy_file(parts[2], parts[1]);  // part 3 where part 2 should be
  EXPECT_THROW(open_model(parts[0]), ModelError);
  fs::copy_file(parts[0], dir.file("renamed.gguf"));
  try {
    open_model(dir.file("renamed.gguf"));
    FAIL() << "a part whose name does not lead to the others";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be found"), std::string::npos) << e.what();
  }
}
