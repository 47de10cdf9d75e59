#include "node/adversary/coalition.h"

#include <algorithm>
#include <limits>

#include "compress/decode.h"
#include "kernels/vector_ops.h"
#include "node/exchange/replicas.h"

namespace phalanx::node {
namespace {

// Rounds ahead of the window's floor that are kept: a fellow may run a round or two ahead.
constexpr std::uint64_t kAhead = 8;

}  // namespace

CoalitionBook::CoalitionBook(std::vector<std::uint32_t> fellows, std::size_t dim)
    : fellows_(std::move(fellows)), dim_(dim) {
  std::sort(fellows_.begin(), fellows_.end());
}

bool CoalitionBook::take(std::uint32_t from, const net::v1::Coalition& m) {
  if (!std::binary_search(fellows_.begin(), fellows_.end(), from)) return false;
  if (m.round() < floor_ || m.round() > floor_ + kAhead) return false;
  std::vector<float> v;
  if (m.crafted() || m.count() > 0) {
    v.resize(dim_);
    const auto& p = m.payload();
    if (!compress::decode({reinterpret_cast<const std::uint8_t*>(p.data()), p.size()}, v) ||
        !kernels::allFinite(v)) {
      return false;
    }
  }
  Round& r = rounds_[m.round()];
  if (m.crafted()) {
    if (m.targeted()) {
      r.crafted_for[m.about()] = std::move(v);
    } else {
      r.crafted = std::move(v);
    }
    return true;
  }
  Share& s = r.by_fellow[from];
  if (s.count && *s.count != m.count()) return false;  // a share keeps its announced size
  s.count = m.count();
  if (m.count() == 0) return true;
  if (s.about.size() >= m.count()) return false;
  s.about.insert(m.about());
  r.pooled[m.about()] = std::move(v);
  return true;
}

bool CoalitionBook::whole(const Round& r, std::uint32_t fellow) {
  const auto s = r.by_fellow.find(fellow);
  return s != r.by_fellow.end() && s->second.count && s->second.about.size() >= *s->second.count;
}

bool CoalitionBook::sharesComplete(std::uint64_t round, std::span<const std::uint32_t> live) const {
  const auto it = rounds_.find(round);
  for (const std::uint32_t f : fellows_) {
    if (std::find(live.begin(), live.end(), f) == live.end()) continue;
    if (it == rounds_.end() || !whole(it->second, f)) return false;
  }
  return true;
}

std::size_t CoalitionBook::sharesIn(std::uint64_t round) const {
  const auto it = rounds_.find(round);
  if (it == rounds_.end()) return 0;
  return std::size_t(std::count_if(fellows_.begin(), fellows_.end(),
                                   [&](std::uint32_t f) { return whole(it->second, f); }));
}

const std::map<std::uint32_t, std::vector<float>>& CoalitionBook::pooled(
    std::uint64_t round) const {
  static const std::map<std::uint32_t, std::vector<float>> none;
  const auto it = rounds_.find(round);
  return it == rounds_.end() ? none : it->second.pooled;
}

const std::vector<float>* CoalitionBook::crafted(std::uint64_t round,
                                                 std::optional<std::uint32_t> target) const {
  const auto it = rounds_.find(round);
  if (it == rounds_.end()) return nullptr;
  if (!target) return it->second.crafted ? &*it->second.crafted : nullptr;
  const auto v = it->second.crafted_for.find(*target);
  return v == it->second.crafted_for.end() ? nullptr : &v->second;
}

bool CoalitionBook::anyCrafted(std::uint64_t round) const {
  const auto it = rounds_.find(round);
  return it != rounds_.end() && (it->second.crafted || !it->second.crafted_for.empty());
}

std::uint32_t CoalitionBook::leader(std::uint32_t self, std::span<const std::uint32_t> live) const {
  std::uint32_t lowest = self;
  for (const std::uint32_t f : fellows_) {
    if (std::find(live.begin(), live.end(), f) != live.end()) lowest = std::min(lowest, f);
  }
  return lowest;
}

void CoalitionBook::advance(std::uint64_t current) {
  floor_ = std::max(floor_, current >= 2 ? current - 2 : 0);
  rounds_.erase(rounds_.begin(), rounds_.lower_bound(floor_));
}

std::vector<net::v1::Envelope> CoalitionBook::shares(std::uint64_t round,
                                                     std::span<const std::uint32_t> ids,
                                                     std::span<const std::span<const float>> rows) {
  std::vector<net::v1::Envelope> out;
  if (ids.empty()) {
    net::v1::Coalition& c = *out.emplace_back().mutable_coalition();
    c.set_round(round);
    return out;
  }
  for (std::size_t k = 0; k < ids.size(); ++k) {
    net::v1::Coalition& c = *out.emplace_back().mutable_coalition();
    c.set_round(round);
    c.set_about(ids[k]);
    c.set_count(std::uint32_t(ids.size()));
    const std::vector<std::uint8_t> bytes = encodeDense(rows[k]);
    c.set_payload(bytes.data(), bytes.size());
  }
  return out;
}

net::v1::Envelope CoalitionBook::craftedMessage(std::uint64_t round, std::span<const float> vector,
                                                std::optional<std::uint32_t> target) {
  net::v1::Envelope e;
  net::v1::Coalition& c = *e.mutable_coalition();
  c.set_round(round);
  if (target) {
    c.set_targeted(true);
    c.set_about(*target);
  }
  c.set_crafted(true);
  const std::vector<std::uint8_t> bytes = encodeDense(vector);
  c.set_payload(bytes.data(), bytes.size());
  return e;
}

}  // namespace phalanx::node
