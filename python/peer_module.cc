// phalanx._phalanx: one peer of a phalanx run inside a Python process. The node (transport,
// round gate, compression, robust mixing, faults, /metrics and /control, jsonl, checkpoints)
// runs node::runDaemon on its own C++ thread; the script's training loop hands each round's
// vector to exchange(), which waits with the GIL released and returns the mix in the same
// buffer (one copy in, one copy out, by the node's thread). python/phalanx/__init__.py wraps it for
// tensors.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <asio.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "node/daemon.h"
#include "node/peer_node.h"
#include "topologies/topology.h"
#include "train/external_learner.h"

namespace py = pybind11;

namespace phalanx::python {
namespace {

using train::ExternalLearner;

const char* answerName(train::ExternalLearner::Answer a) {
  switch (a) {
    case train::ExternalLearner::Answer::kMixed:
      return "mixed";
    case train::ExternalLearner::Answer::kPassed:
      return "passed";
    case train::ExternalLearner::Answer::kFinished:
      return "finished";
    case train::ExternalLearner::Answer::kPending:
      break;
  }
  return "pending";
}

const char* roleName(node::PeerNode::Role r) {
  switch (r) {
    case node::PeerNode::Role::kHonest:
      return "honest";
    case node::PeerNode::Role::kVectorAttack:
      return "vector_attack";
    case node::PeerNode::Role::kSilent:
      return "silent";
    case node::PeerNode::Role::kWireAttack:
      return "wire_attack";
  }
  return "honest";
}

// How long one wait for the node lasts before Python gets to look at its signals (Ctrl-C).
constexpr std::chrono::milliseconds kSignalPoll{100};

class Peer {
 public:
  Peer(node::DaemonRequest request, std::size_t dimension,
       std::vector<std::pair<std::size_t, std::size_t>> layers)
      : out_(request.out) {
    node::PeerSetup setup = node::daemonSetup(request);  // config errors raise here, at once
    std::vector<compress::LayerShape> shapes;
    for (const auto& [rows, cols] : layers) shapes.push_back({rows, cols});
    learner_ = std::make_shared<train::ExternalLearner>(dimension, std::move(shapes));
    setup.learner = learner_;
    id_ = setup.id;
    peers_ = setup.topology->size();
    index_ = setup.topology->indexOf(setup.id);
    exchange_ = phalanx::node::kExchanges.name(setup.config.exchange);
    thread_ = std::thread([this, setup = std::move(setup)]() mutable { run(std::move(setup)); });
    std::exception_ptr failed;
    {
      py::gil_scoped_release unlocked;
      std::unique_lock lock(mutex_);
      ready_cv_.wait(lock, [this] { return ready_ || ended_; });
      failed = error_;
    }
    if (failed) {
      join();
      std::rethrow_exception(failed);
    }
  }

  ~Peer() {
    try {
      close();
    } catch (...) {  // a destructor must not throw; close() logs nothing that can fail
    }
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  // Hands `vector` (a writable, C-contiguous float32 buffer of the peer's dimension) to the
  // node as this round's vector and waits for the mix, which replaces it.
  std::string exchange(const py::buffer& vector, double loss) {
    py::buffer_info info = vector.request(/*writable=*/true);
    if (info.format != py::format_descriptor<float>::format() || info.itemsize != 4) {
      throw py::type_error("exchange: expected float32 values, got format '" + info.format + "'");
    }
    py::ssize_t expected = info.itemsize;
    for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
      if (info.shape[std::size_t(d)] > 1 && info.strides[std::size_t(d)] != expected) {
        throw py::value_error("exchange: the buffer is not contiguous (copy it first)");
      }
      expected *= info.shape[std::size_t(d)];
    }
    const std::span<float> values(static_cast<float*>(info.ptr), std::size_t(info.size));
    // The node reads the vector in place and writes the mix back in place: the buffer is its
    // own until the answer, or until a signal's exception ends the wait (withdraw).
    train::ExternalLearner::Answer answer = learner_->submit(values, loss);  // may throw ValueError
    while (answer != train::ExternalLearner::Answer::kFinished) {
      {
        py::gil_scoped_release unlocked;
        answer = learner_->await(kSignalPoll);
      }
      if (answer != train::ExternalLearner::Answer::kPending) break;
      if (PyErr_CheckSignals() != 0) {
        learner_->withdraw();
        throw py::error_already_set();
      }
    }
    return answerName(answer);
  }

  void report(std::optional<double> accuracy, std::optional<double> loss,
              std::vector<std::pair<std::string, double>> named) {
    learner_->report({.loss = loss, .accuracy = accuracy, .named = std::move(named)});
  }

  // Goodbye to the neighbours, then waits for the node's thread.
  void close() {
    {
      std::lock_guard lock(mutex_);
      if (io_ && node_) {
        node::PeerNode* n = node_;
        asio::post(*io_, [n] { n->stop(); });
      }
    }
    py::gil_scoped_release unlocked;
    join();
  }

  // "running", or how the node ended: "completed", "incomplete" (stopped early), "diverged".
  std::string status() const {
    std::lock_guard lock(mutex_);
    if (!ended_) return "running";
    if (!exit_) return "failed";
    switch (*exit_) {
      case node::DaemonExit::kCompleted:
        return "completed";
      case node::DaemonExit::kDiverged:
        return "diverged";
      case node::DaemonExit::kIncomplete:
        break;
    }
    return "incomplete";
  }

  std::uint32_t id() const { return id_; }
  std::size_t peers() const { return peers_; }
  std::size_t index() const { return index_; }
  std::size_t dimension() const { return learner_->dimension(); }
  std::string role() const {
    std::lock_guard lock(mutex_);
    return role_;
  }
  std::uint64_t rounds() const {
    std::lock_guard lock(mutex_);
    return rounds_;
  }
  std::string exchangeMode() const { return exchange_; }
  std::uint64_t roundsMixed() const { return learner_->roundsMixed(); }
  bool finished() const { return learner_->stopped(); }
  bool evaluationDue() const { return learner_->evaluationDue(); }
  std::string out() const { return out_; }

 private:
  void run(node::PeerSetup setup) {
    node::DaemonOptions options{.signals = false,  // Python owns the process's signals
                                .on_ready =
                                    [this](asio::io_context& io, node::PeerNode& n) {
                                      std::lock_guard lock(mutex_);
                                      io_ = &io;
                                      node_ = &n;
                                      role_ = roleName(n.role());
                                      rounds_ = n.rounds();
                                      ready_ = true;
                                      ready_cv_.notify_all();
                                    },
                                .on_stopped =
                                    [this] {
                                      std::lock_guard lock(mutex_);
                                      io_ = nullptr;
                                      node_ = nullptr;
                                    }};
    std::optional<node::DaemonExit> exit;
    std::exception_ptr error;
    try {
      exit = node::runDaemon(std::move(setup), out_, std::move(options));
    } catch (...) {
      error = std::current_exception();
    }
    learner_->finished();  // a script waiting in exchange() learns the node is gone
    std::lock_guard lock(mutex_);
    io_ = nullptr;
    node_ = nullptr;
    exit_ = exit;
    error_ = error;
    ended_ = true;
    ready_cv_.notify_all();
  }

  void join() {
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

  std::string out_;
  std::shared_ptr<train::ExternalLearner> learner_;
  std::uint32_t id_ = 0;
  std::size_t peers_ = 0, index_ = 0;
  std::string exchange_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable ready_cv_;
  asio::io_context* io_ = nullptr;  // while the loop runs
  node::PeerNode* node_ = nullptr;
  std::string role_;
  std::uint64_t rounds_ = 0;
  bool ready_ = false, ended_ = false;
  std::optional<node::DaemonExit> exit_;
  std::exception_ptr error_;
};

}  // namespace
}  // namespace phalanx::python

PYBIND11_MODULE(_phalanx, m) {
  using phalanx::python::Peer;
  m.doc() = "phalanx's C++ core: one peer's network, compression and robust mixing";
  m.attr("__version__") = PHALANX_VERSION;
  // The node's error types arrive as ValueError (bad input: config, topology, data) and
  // RuntimeError (checkpoints, ports).
  py::register_exception<phalanx::node::ConfigError>(m, "ConfigError", PyExc_ValueError);
  py::register_exception<phalanx::topologies::TopologyError>(m, "TopologyError", PyExc_ValueError);
  py::register_exception<phalanx::train::CheckpointError>(m, "CheckpointError", PyExc_RuntimeError);
  py::class_<Peer>(m, "Peer")
      .def(py::init([](const std::string& topology, const std::string& config,
                       const std::string& id, std::size_t dimension, const std::string& out,
                       const std::vector<std::string>& sets, const std::string& attack,
                       const std::vector<std::pair<std::size_t, std::size_t>>& layers,
                       std::uint64_t rounds, bool resume, const std::string& listen_host,
                       std::uint64_t join_timeout_ms) {
             phalanx::node::DaemonRequest r{
                 .topology = topology,
                 .config = config,
                 .id = id,
                 .sets = sets,
                 .attack = attack,
                 .out = out,
                 .listen_host = listen_host,
                 .rounds = rounds,
                 .resume = resume,
                 .join_timeout = std::chrono::milliseconds(join_timeout_ms)};
             return std::make_unique<Peer>(std::move(r), dimension, layers);
           }),
           py::arg("topology"), py::arg("config"), py::arg("id"), py::arg("dimension"),
           py::arg("out") = "", py::arg("sets") = std::vector<std::string>{},
           py::arg("attack") = "",
           py::arg("layers") = std::vector<std::pair<std::size_t, std::size_t>>{},
           py::arg("rounds") = 0, py::arg("resume") = false, py::arg("listen_host") = "",
           py::arg("join_timeout_ms") = 30000)
      .def("exchange", &Peer::exchange, py::arg("vector"),
           py::arg("loss") = std::numeric_limits<double>::quiet_NaN(),
           "Gossip this round's vector and replace it with the robust mix. Returns 'mixed', "
           "'passed' (a Byzantine peer: its attack went out instead) or 'finished'.")
      .def("report", &Peer::report, py::arg("accuracy"), py::arg("loss"), py::arg("named"),
           "The script's evaluation of the mix it got back: the round's record waits for it on "
           "an evaluation round (evaluation_due); otherwise it goes with the next round.")
      .def("close", &Peer::close, "Goodbye to the neighbours; waits for the node to stop.")
      .def_property_readonly("status", &Peer::status)
      .def_property_readonly("id", &Peer::id)
      .def_property_readonly("peers", &Peer::peers)
      .def_property_readonly("index", &Peer::index)
      .def_property_readonly("dimension", &Peer::dimension)
      .def_property_readonly("role", &Peer::role)
      .def_property_readonly("rounds", &Peer::rounds)
      .def_property_readonly("exchange_mode", &Peer::exchangeMode)
      .def_property_readonly("rounds_mixed", &Peer::roundsMixed)
      .def_property_readonly("finished", &Peer::finished)
      .def_property_readonly("evaluation_due", &Peer::evaluationDue)
      .def_property_readonly("out", &Peer::out);
}
