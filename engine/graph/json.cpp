#include "engine/graph/json.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/error.h"
#include "engine/graph/json_state.h"
#include "engine/graph/op_schema.h"
#include "engine/io/atomic_file.h"

namespace kiln::graph {

using nlohmann::json;

namespace {

json attr_json(const AttrValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

[[noreturn]] void fail(const std::string& what) { throw ValueError("graph JSON: " + what); }

std::string where(const json& node, size_t index) {
  if (node.is_object() && node.contains("name") && node["name"].is_string())
    return " (node '" + node["name"].get<std::string>() + "')";
  return " (nodes[" + std::to_string(index) + "])";
}

void only_keys(const json& obj, std::initializer_list<const char*> keys, const std::string& context) {
  for (const auto& [k, v] : obj.items()) {
    bool known = false;
    for (const char* key : keys) known = known || k == key;
    if (!known) fail("unknown key '" + k + "'" + context);
  }
}

int64_t get_int(const json& j, const char* key, const std::string& context) {
  if (!j.contains(key)) fail(std::string("missing \"") + key + "\"" + context);
  const json& v = j[key];
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
    fail(std::string("\"") + key + "\" must be an integer, got " + v.dump() + context);
  return v.get<int64_t>();
}

AttrValue parse_attr(const OpSchema& s, const std::string& name, const json& v, const std::string& context) {
  const AttrSpec* spec = s.attribute(name);
  if (!spec) fail(*s.check_attr(name, AttrValue(int64_t{0})) + context);
  auto bad = [&](const char* want) -> AttrValue { fail("attribute '" + name + "' must be " + want + ", got " + v.dump() + context); };
  auto integer = [](const json& x) { return x.is_number_integer() && !(x.is_number_unsigned() && x.get<uint64_t>() > INT64_MAX); };
  switch (spec->type) {
    case AttrType::Int: return integer(v) ? AttrValue(v.get<int64_t>()) : bad("an integer");
    case AttrType::Float: return v.is_number() ? AttrValue(v.get<double>()) : bad("a number");
    case AttrType::Bool: return v.is_boolean() ? AttrValue(v.get<bool>()) : bad("true or false");
    case AttrType::String:
    case AttrType::Choice: return v.is_string() ? AttrValue(v.get<std::string>()) : bad("a string");
    case AttrType::Ints: {
      if (!v.is_array()) return bad("a list of integers");
      std::vector<int64_t> ints;
      for (const json& e : v) {
        if (!integer(e)) return bad("a list of integers");
        ints.push_back(e.get<int64_t>());
      }
      return ints;
    }
  }
  return bad("valid");
}

PortRef parse_port(const json& e, const char* key, const std::string& context) {
  if (!e.contains(key) || !e[key].is_object()) fail(std::string("edge needs \"") + key + "\": {\"node\": id, \"port\": n}" + context);
  only_keys(e[key], {"node", "port"}, context);
  int64_t port = get_int(e[key], "port", context);
  if (port < 0 || port > 1024) fail("port " + std::to_string(port) + " is out of range" + context);
  return {get_int(e[key], "node", context), static_cast<int>(port)};
}

// Pretty printing: a value whose one-line form fits in kLineWidth characters stays on one
// line ({"node": 1, "port": 0}); larger objects and arrays get one member per line,
// indented by two spaces. Scalars print as nlohmann does (doubles: shortest exact form).
constexpr size_t kLineWidth = 100;

// Appends j's one-line form to s; false as soon as s is longer than `limit` (s is then
// cut short), so deciding whether a large value fits costs O(limit), not O(size).
bool one_line(const json& j, size_t limit, std::string& s) {
  if (j.is_object() || j.is_array()) {
    s += j.is_object() ? "{" : "[";
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it != j.begin()) s += ", ";
      if (j.is_object()) s.append(json(it.key()).dump()).append(": ");
      if (!one_line(it.value(), limit, s)) return false;
    }
    s += j.is_object() ? "}" : "]";
  } else {
    s += j.dump();
  }
  return s.size() <= limit;
}

void pretty(const json& j, size_t indent, std::string& out) {
  std::string flat;
  const bool fits = one_line(j, kLineWidth - std::min(indent, kLineWidth), flat);
  if (fits || !(j.is_object() || j.is_array()) || j.empty()) {  // scalars and {} / [] are complete
    out += flat;
    return;
  }
  const std::string pad(indent + 2, ' ');
  out += j.is_object() ? "{\n" : "[\n";
  size_t i = 0;
  for (auto it = j.begin(); it != j.end(); ++it, ++i) {
    out += pad;
    if (j.is_object()) out.append(json(it.key()).dump()).append(": ");
    pretty(it.value(), indent + 2, out);
    out += i + 1 < j.size() ? ",\n" : "\n";
  }
  out.append(indent, ' ').append(j.is_object() ? "}" : "]");
}

}  // namespace

std::string to_json(const Graph& g, BlobStore* blobs) {
  json nodes = json::array();
  for (const Node& n : g.nodes()) {
    json attrs = json::object();
    for (const auto& [k, v] : n.attrs) attrs[k] = attr_json(v);
    json jn = {{"attrs", attrs}, {"id", n.id}, {"name", n.name}, {"op", n.op}, {"x", n.x}, {"y", n.y}};
    if (!n.trainable) jn["trainable"] = false;  // optional: files without it open as trainable
    nodes.push_back(std::move(jn));
  }
  json edges = json::array();
  for (const Edge& e : g.edges())
    edges.push_back({{"from", {{"node", e.from.node}, {"port", e.from.port}}}, {"to", {{"node", e.to.node}, {"port", e.to.port}}}});
  json root = {{"edges", edges}, {"format", "kiln-graph"}, {"name", g.name}, {"nodes", nodes}, {"version", 1}};
  std::map<std::string, Tensor> state;  // entries of existing nodes only (graph.h)
  for (const auto& [key, t] : g.initial_state)
    if (g.find_by_name(state_key_node(key))) state[key] = t;
  if (!state.empty()) {
    root["initial_state"] = detail::state_json(state, blobs);
    root["version"] = kGraphFormatVersion;
  }
  std::string out;
  pretty(root, 0, out);
  return out + "\n";
}

Graph from_json(const std::string& text, const BlobStore* blobs) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    if (auto p = msg.find("] "); msg.rfind("[json.exception", 0) == 0 && p != std::string::npos) msg = msg.substr(p + 2);
    fail("not valid JSON: " + msg);
  }
  if (!root.is_object() || !root.contains("format") || root["format"] != "kiln-graph")
    fail("not a Kiln graph (expected an object with \"format\": \"kiln-graph\")");
  const int64_t version = get_int(root, "version", "");
  if (version > kGraphFormatVersion)
    fail("version " + std::to_string(version) + " was written by a newer Kiln; this build reads version " +
         std::to_string(kGraphFormatVersion) + " or older");
  if (version < 1) fail("version must be at least 1, got " + std::to_string(version));
  only_keys(root, {"edges", "format", "initial_state", "name", "nodes", "version"}, "");
  if (root.contains("initial_state") && version < 2) fail("\"initial_state\" needs version 2, the file says " + std::to_string(version));
  if (!root.contains("nodes") || !root["nodes"].is_array()) fail("\"nodes\" must be a list");
  if (root.contains("edges") && !root["edges"].is_array()) fail("\"edges\" must be a list");
  if (root.contains("name") && !root["name"].is_string()) fail("\"name\" must be a string");

  Graph g;
  g.name = root.value("name", "");
  const json& nodes = root["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& jn = nodes[i];
    const std::string ctx = where(jn, i);
    if (!jn.is_object()) fail("each node must be an object" + ctx);
    only_keys(jn, {"attrs", "id", "name", "op", "trainable", "x", "y"}, ctx);
    Node n;
    n.id = get_int(jn, "id", ctx);
    if (!jn.contains("op") || !jn["op"].is_string()) fail("missing \"op\"" + ctx);
    if (!jn.contains("name") || !jn["name"].is_string()) fail("missing \"name\"" + ctx);
    n.op = jn["op"].get<std::string>();
    n.name = jn["name"].get<std::string>();
    const OpSchema* s = OpRegistry::global().find(n.op);
    if (!s) fail("unknown op '" + n.op + "'" + ctx);
    for (const char* axis : {"x", "y"})
      if (jn.contains(axis) && (!jn[axis].is_number() || !std::isfinite(jn[axis].get<double>())))
        fail(std::string("\"") + axis + "\" must be a number" + ctx);
    n.x = jn.value("x", 0.0);
    n.y = jn.value("y", 0.0);
    if (jn.contains("trainable") && !jn["trainable"].is_boolean()) fail("\"trainable\" must be true or false" + ctx);
    n.trainable = jn.value("trainable", true);
    if (jn.contains("attrs")) {
      if (!jn["attrs"].is_object()) fail("\"attrs\" must be an object" + ctx);
      for (const auto& [k, v] : jn["attrs"].items()) n.attrs[k] = parse_attr(*s, k, v, ctx);
    }
    n.attrs = s->with_defaults(std::move(n.attrs));
    if (auto why = s->check_attrs(n.attrs)) fail(*why + ctx);
    if (g.contains(n.id)) fail("duplicate node id " + std::to_string(n.id) + ctx);
    try {
      g.insert_node(n);
    } catch (const ValueError& e) {
      fail(e.what() + ctx);
    }
  }
  if (root.contains("edges")) {
    const json& edges = root["edges"];
    for (size_t i = 0; i < edges.size(); ++i) {
      const json& e = edges[i];
      std::string ctx = " (edges[" + std::to_string(i) + "])";
      if (!e.is_object()) fail("each edge must be an object" + ctx);
      only_keys(e, {"from", "to"}, ctx);
      PortRef from = parse_port(e, "from", ctx), to = parse_port(e, "to", ctx);
      if (const Node* n = g.find(to.node)) ctx = " (edge into node '" + n->name + "')";
      if (from.node == to.node) fail("a node cannot connect to itself" + ctx);
      try {
        g.connect_unchecked_cycle(from, to);
      } catch (const ValueError& err) {
        fail(err.what() + ctx);
      }
    }
  }
  if (root.contains("initial_state")) {
    g.initial_state = detail::state_of_json(root["initial_state"], blobs);
    for (const auto& [key, t] : g.initial_state)
      if (!g.find_by_name(state_key_node(key))) fail("initial_state '" + key + "' names no node");
  }
  return g;
}

Graph load_graph(const std::string& path) {
  std::error_code ec;
  KILN_CHECK(!std::filesystem::is_directory(path, ec), IoError, path, " is a directory, not a graph JSON file");
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, "cannot open graph file '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  KILN_CHECK(!in.bad(), IoError, "cannot read graph file '", path, "'");
  try {
    return from_json(text.str());
  } catch (const ValueError& e) {
    throw ValueError(path + ": " + e.what());
  }
}

void save_graph(const Graph& g, const std::string& path) {
  const std::string text = to_json(g);
  io::AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace kiln::graph
