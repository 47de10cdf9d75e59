#include "topologies/convert.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <sstream>

namespace phalanx::topologies {
namespace {

// Whitespace-separated whole numbers of one line; nullopt when a token is not one.
std::optional<std::vector<std::uint64_t>> numbers(const std::string& line) {
  std::vector<std::uint64_t> out;
  std::istringstream in(line);
  for (std::string token; in >> token;) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (ec != std::errc() || end != token.data() + token.size() || v > UINT32_MAX) {
      return std::nullopt;
    }
    out.push_back(v);
  }
  return out;
}

std::string withoutComment(std::string line) {
  const auto hash = line.find('#');
  if (hash != std::string::npos) line.resize(hash);
  return line;
}

}  // namespace

GraphFile readGraphFile(const std::string& text, const std::string& format,
                        const std::string& source) {
  if (std::find(kGraphFormats.begin(), kGraphFormats.end(), format) == kGraphFormats.end()) {
    throw TopologyError(fmt::format("unknown graph format '{}' (allowed: {})", format,
                                    fmt::join(kGraphFormats, ", ")));
  }
  std::istringstream in(text);
  std::string line;
  std::size_t line_no = 0;
  auto fail = [&](const std::string& what) {
    throw TopologyError(fmt::format("{}:{}: {}", source, line_no, what));
  };
  GraphFile g;
  std::set<NodeId> ids;
  std::set<Edge> edges;
  auto addEdge = [&](std::uint64_t a, std::uint64_t b) {
    if (a == b) fail(fmt::format("edge {} {} joins a node to itself", a, b));
    edges.insert(a < b ? Edge{NodeId(a), NodeId(b)} : Edge{NodeId(b), NodeId(a)});
  };

  if (format == "edgelist") {
    while (std::getline(in, line)) {
      ++line_no;
      const auto v = numbers(withoutComment(line));
      if (!v || (v->size() != 0 && v->size() != 2)) fail("expected two node ids: \"a b\"");
      if (v->empty()) continue;
      ids.insert(NodeId((*v)[0]));
      ids.insert(NodeId((*v)[1]));
      addEdge((*v)[0], (*v)[1]);
    }
    if (ids.empty()) fail("no edges");
  } else {
    ++line_no;
    std::getline(in, line);
    const auto header = numbers(line);
    if (!header || header->size() != 1 || (*header)[0] == 0) {
      fail("the first line must hold the number of nodes");
    }
    const std::uint64_t n = (*header)[0];
    for (std::uint64_t i = 0; i < n; ++i) ids.insert(NodeId(i));
    std::uint64_t row = 0;
    while (std::getline(in, line)) {
      ++line_no;
      const auto v = numbers(line);
      if (!v) fail("expected whole numbers");
      for (std::uint64_t x : *v) {
        if (x >= n) fail(fmt::format("node {} is outside 0..{}", x, n - 1));
      }
      if (format == "decentralizepy-edges") {
        if (v->empty()) continue;
        if (v->size() != 2) fail("expected an edge \"a b\"");
        addEdge((*v)[0], (*v)[1]);
      } else {
        if (row >= n) {
          if (v->empty()) continue;
          fail(fmt::format("more adjacency lines than the {} nodes", n));
        }
        for (std::uint64_t x : *v) addEdge(row, x);
        ++row;
      }
    }
  }
  g.ids.assign(ids.begin(), ids.end());
  g.edges.assign(edges.begin(), edges.end());
  return g;
}

std::string writeGraphFile(const Topology& t, const std::string& format) {
  if (format == "edgelist") {
    std::string out = "# phalanx topology: one undirected edge per line\n";
    for (const auto& [a, b] : t.edges()) out += fmt::format("{} {}\n", a, b);
    return out;
  }
  if (format != "decentralizepy-edges" && format != "decentralizepy-adjacency") {
    throw TopologyError(fmt::format("unknown graph format '{}' (allowed: {})", format,
                                    fmt::join(kGraphFormats, ", ")));
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.nodes()[i].id != i) {
      throw TopologyError(
          fmt::format("{} numbers nodes 0..{}; this topology has node id {} in position {}", format,
                      t.size() - 1, t.nodes()[i].id, i));
    }
  }
  std::string out = fmt::format("{}\n", t.size());
  if (format == "decentralizepy-edges") {
    // Both directions, as DecentralizePy itself writes them.
    for (const auto& node : t.nodes()) {
      for (NodeId peer : t.neighbours(node.id)) out += fmt::format("{} {}\n", node.id, peer);
    }
  } else {
    for (const auto& node : t.nodes())
      out += fmt::format("{}\n", fmt::join(t.neighbours(node.id), " "));
  }
  return out;
}

}  // namespace phalanx::topologies
