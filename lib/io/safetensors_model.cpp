// SafetensorsModel: find a model's safetensors file(s) and route tensor names to shards.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json_error.h"
#include "io/regular_file.h"
#include "io/safetensors.h"

namespace lmscope {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const std::string& path) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_file(path, "cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

SafetensorsModel SafetensorsModel::open(const std::string& path) {
  SafetensorsModel m;
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) {
    // transformers looks for the single file first, then the index.
    const std::string single = (fs::path(path) / "model.safetensors").string();
    const std::string index = (fs::path(path) / "model.safetensors.index.json").string();
    if (fs::exists(single, ec)) file = single;
    else if (fs::exists(index, ec)) file = index;
    else fail_file(path, "no model.safetensors or model.safetensors.index.json in this directory");
  }
  m.source_ = file;

  if (file.size() < 5 || file.compare(file.size() - 5, 5, ".json") != 0) {
    m.files_.push_back(SafetensorsFile::open(file));
    for (const auto& n : m.files_[0].names()) m.route_[n] = 0;
    return m;
  }

  json idx;
  try {
    idx = json::parse(read_text(file));
  } catch (const json::exception& e) {
    fail_file(file, "invalid JSON: " + json_error_text(e));
  }
  if (!idx.is_object()) fail_file(file, "must be a JSON object, got " + json_kind(idx));
  auto wm = idx.find("weight_map");
  if (wm == idx.end()) fail_file(file, "field 'weight_map' is missing");
  if (!wm->is_object()) fail_file(file, "field 'weight_map' must be an object, got " + json_kind(*wm));

  // Each shard is opened (and its header validated) once, however many names it holds.
  const fs::path dir = fs::path(file).parent_path();
  std::map<std::string, size_t> shard_index;
  for (const auto& [name, shard] : wm->items()) {
    if (!shard.is_string())
      fail_file(file, "weight_map entry '" + name + "' must be a string, got " + json_kind(shard));
    const std::string rel = shard.get<std::string>();
    auto it = shard_index.find(rel);
    if (it == shard_index.end()) {
      const std::string shard_path = (dir / rel).string();
      if (!fs::is_regular_file(shard_path, ec))
        fail_file(file, "shard '" + rel + "' (holding tensor '" + name + "') does not exist");
      m.files_.push_back(SafetensorsFile::open(shard_path));
      it = shard_index.emplace(rel, m.files_.size() - 1).first;
    }
    if (!m.files_[it->second].has(name))
      fail_file(file, "tensor '" + name + "' is mapped to shard '" + rel +
                     "', but that file has no such tensor");
    m.route_[name] = it->second;
  }
  return m;
}

std::vector<std::string> SafetensorsModel::names() const {
  std::vector<std::string> out;
  for (const auto& [n, i] : route_) out.push_back(n);
  return out;
}

bool SafetensorsModel::has(const std::string& name) const { return route_.count(name) != 0; }

const SafetensorsFile& SafetensorsModel::file_of(const std::string& name) const {
  auto it = route_.find(name);
  if (it == route_.end()) fail_file(source_, "tensor '" + name + "' is missing");
  return files_[it->second];
}

TensorInfo SafetensorsModel::info(const std::string& name) const { return file_of(name).info(name); }

Tensor SafetensorsModel::tensor(const std::string& name) const { return file_of(name).tensor(name); }

std::shared_ptr<void> SafetensorsModel::storage() const {
  // One owner that holds every shard: a shared vector of the shards' owners.
  auto owners = std::make_shared<std::vector<std::shared_ptr<void>>>();
  for (const auto& f : files_) owners->push_back(f.owner());
  return owners;
}

}  // namespace lmscope
