// What `phalanx launch` starts: one `phalanx node` command (or one Python training script) per
// peer of the topology, run here for the peers on this machine's addresses and through ssh for
// the others, and the small remote commands around them (files copied over, a signal to a
// remote peer). Pure, but for the few helpers that run such a command; tools/launch_command.cc
// runs the plan.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace phalanx::tools {

struct LaunchRequest {
  std::string topology_file, config_file, out;  // absolute paths (the same on every host)
  std::string binary;                           // this phalanx
  std::string remote_binary;                    // phalanx on other hosts; empty: `binary`
  // The command that reaches another host, split into words at spaces ("ssh -p 2222 -i key").
  std::string ssh = "ssh";
  // The run folder on the other hosts. Empty: `out` itself, a filesystem every host shares.
  // Otherwise the topology and config are copied there before the start and each remote
  // peer's results (node-K.jsonl, node-K.npy, node-K.log) copied back at the end.
  std::string remote_out;
  std::uint64_t rounds = 0;       // 0: the config's
  std::vector<std::string> sets;  // --set for every peer
  std::set<std::uint32_t> byzantine;
  std::string attack = "alie";
  // A command every peer runs under, "{id}" replaced by its id (tools/netem: "ip netns exec
  // phx{id}"). Words split on spaces. With it, every peer starts on this machine.
  std::string wrap;
  // Non-empty: each peer is this Python script and its arguments (python/phalanx's
  // Peer.from_env reads its place from PHALANX_* variables) instead of `phalanx node`.
  std::vector<std::string> script;
  std::string python = "python3";  // the interpreter for `script`
  std::string python_path;         // PYTHONPATH for `script` (the built package's folder)
  // CUDA devices the script peers of one host share, round-robin by their LOCAL_RANK
  // (CUDA_VISIBLE_DEVICES); empty: the variable is left as the peers inherit it.
  std::vector<std::string> gpus;
};

// A peer started on another host: how to reach it and where it wrote its pid.
struct RemoteProcess {
  std::vector<std::string> ssh;  // ssh words and the host
  std::string pid_file;
  bool operator==(const RemoteProcess&) const = default;
};

struct LaunchPeer {
  std::uint32_t id = 0;
  bool local = true;
  std::vector<std::string> argv;  // what to exec here (ssh ... for a remote peer)
  // A remote peer's: how to reach it (a command line appended to remote.ssh runs there without
  // a tty, so what it prints arrives byte for byte) and its run folder there.
  RemoteProcess remote;
  std::string out;
  // The same as one line a shell would run (arguments quoted where needed).
  std::string shellCommand() const;
};

struct LaunchPlan {
  std::vector<LaunchPeer> peers;
  std::vector<std::string> sets;  // the request's plus byzantine.K.attack for each attacker
  std::string command_line;       // a readable summary of the launch, for the report
};

// `--byzantine IDS --attack NAME` as config overrides, byzantine.K.attack=NAME per id: how every
// peer of a launch, a simulation or a Kubernetes run learns who the attackers are (their side
// knowledge; the honest peers' rules never read it). Throws std::invalid_argument naming an id
// `topology` does not have.
std::vector<std::string> byzantineSets(const std::set<std::uint32_t>& ids,
                                       const std::string& attack,
                                       const topologies::Topology& topology);

// `local_hosts`: the names and addresses of this machine.
LaunchPlan planLaunch(const LaunchRequest& request, const topologies::Topology& topology,
                      const std::set<std::string>& local_hosts);

// --gpus SPEC as the device list script peers share (LaunchRequest::gpus): "none" gives none;
// "auto" the CUDA_VISIBLE_DEVICES launch itself has (`visible`, when set and not empty), else
// 0 .. detected-1; otherwise SPEC is the list, comma-separated (indices or GPU UUIDs). Throws
// std::invalid_argument for an empty entry or one with a space.
std::vector<std::string> gpuList(const std::string& spec, const char* visible,
                                 std::size_t detected);
// The GPUs `nvidia-smi -L` lists here (0 without the tool or a device).
std::size_t detectedGpus();

// The final parameters a peer wrote (OUT/node-K.npy), if it did.
std::optional<std::vector<float>> finalModel(const std::filesystem::path& out, std::uint32_t id);

// OUT/pids.json: the pid of each peer this launch started here ({"3": 4711, ...}), and for a
// peer on another host how to reach it ({"5": {"ssh": [...], "pid_file": "..."}}); `phalanx
// inject --run OUT` reads it to signal a peer. The one writer and reader of the file.
void writePids(const std::filesystem::path& out, const std::map<std::uint32_t, pid_t>& pids,
               const std::map<std::uint32_t, RemoteProcess>& remote = {});
// Empty when the file is missing or not such a map; entries that are not pids are skipped.
std::map<std::uint32_t, pid_t> readPids(const std::filesystem::path& out);
// The remote entries of OUT/pids.json; malformed ones are skipped.
std::map<std::uint32_t, RemoteProcess> readRemotePids(const std::filesystem::path& out);

// `ssh` followed by one shell line run there.
std::vector<std::string> remoteCommand(const std::vector<std::string>& ssh,
                                       const std::string& line);
// Signal `signal` (a name: TERM, KILL, STOP, CONT) to a remote peer's process. 0 on success.
int signalRemote(const RemoteProcess& peer, const std::string& signal);

// This executable's path (/proc/self/exe), for starting more of it.
std::string selfExecutable();

// A whole file as text ("" when unreadable): configs and command lines shown in reports.
std::string readTextFile(const std::filesystem::path& file);

// Single-quotes `word` for a POSIX shell when it holds anything but [A-Za-z0-9_./=:,+-].
std::string shellQuote(const std::string& word);

}  // namespace phalanx::tools
