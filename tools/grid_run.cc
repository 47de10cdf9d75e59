#include "tools/grid_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tools/cell_record.h"
#include "tools/command.h"
#include "tools/grid_report.h"
#include "tools/launch.h"
#include "tools/supervisor.h"

namespace phalanx::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void progress(std::size_t done, std::size_t total, double seconds_per_cell, std::size_t jobs) {
  const int width = 30;
  const int filled = total ? int(width * done / total) : width;
  const double eta =
      seconds_per_cell * double(total - done) / double(std::max<std::size_t>(jobs, 1));
  std::fprintf(stderr, "\r[%s%s] %zu/%zu cells%s", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), done, total,
               done > 0 && done < total
                   ? fmt::format(", ETA {}m{:02}s", int(eta) / 60, int(eta) % 60).c_str()
                   : "");
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

int runGrid(const GridRunOptions& o) {
  Grid grid;
  std::vector<Cell> cells;
  try {
    grid = loadGrid(o.grid);
    if (o.rounds > 0) grid.rounds = o.rounds;
    cells = expand(grid, o.filters);
  } catch (const GridError& e) {
    spdlog::error("{}", e.what());
    return kExitBadInput;
  }
  if (cells.empty()) {
    spdlog::error("experiment: no cell left after the filters");
    return kExitBadInput;
  }
  const fs::path out = fs::absolute(o.out);
  fs::create_directories(out / "cells");
  {
    // How the results were made, for docs/RESULTS.md (tools/dev/results).
    std::string command = "phalanx experiment --grid " + o.grid + " --out " + o.out;
    for (const auto& f : o.filters) command += " --filter " + shellQuote(f);
    if (o.jobs > 1) command += fmt::format(" --jobs {}", o.jobs);
    if (o.rounds > 0) command += fmt::format(" --rounds {}", o.rounds);
    if (o.engine != Engine::kLaunch)
      command += fmt::format(" --engine {}", kEngines.name(o.engine));
    std::ofstream(out / "command.txt") << command << '\n';
  }
  std::vector<CellPlan> plans;
  for (const Cell& cell : cells) {
    try {
      plans.push_back(planCell(grid, cell, o.base_port));  // checks the cell early
    } catch (const std::exception& e) {
      spdlog::error("experiment: cell {}: {}", cell.name(), e.what());
      return kExitBadInput;
    }
  }
  const std::vector<std::size_t> same_run = firstOfSameRun(plans);
  std::vector<std::size_t> todo;
  std::map<std::size_t, CellRecord> records;  // the cells that ran, this time or before
  std::map<std::size_t, std::vector<std::size_t>> copies;  // a cell that runs -> its same runs
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const fs::path dir = out / "cells" / cells[i].name();
    if (o.resume || o.report_only) {
      // A cell that ran (ok, or failed: some honest peer did not finish) is a result; one
      // that could not run (error: bad config, ports, a binary swapped underneath) runs again,
      // unless only the report is wanted: then it stays what it was.
      if (auto r = readCellRecord(cells[i], dir / "result.json");
          r && (r->result.status != CellStatus::kError || o.report_only)) {
        records[i] = std::move(*r);
        continue;
      }
    }
    if (o.report_only) continue;  // no record: reported as not run, its folder left alone
    std::error_code ignored;      // a folder that cannot go is reported when the cell starts
    fs::remove_all(dir, ignored);
    if (same_run[i] == i) {
      todo.push_back(i);
    } else {
      copies[same_run[i]].push_back(i);  // given the record of its first once that has one
    }
  }
  std::size_t same = 0;
  for (const auto& [first, others] : copies) same += others.size();
  std::size_t finished = cells.size() - todo.size() - same;
  // The cells that run the same as `first` take its record (their own cell named) and a line in
  // their logs says whose; without a record (it could not run) they have none either.
  const auto copyRecord = [&](std::size_t first) {
    const auto them = copies.find(first);
    if (them == copies.end()) return;
    for (const std::size_t i : them->second) {
      ++finished;
      if (!records.contains(first)) continue;
      const fs::path dir = out / "cells" / cells[i].name();
      std::error_code made;
      fs::create_directories(dir, made);
      if (made) continue;  // reported as not run; --resume tries again
      CellRecord copy = records[first];
      copy.result.cell = cells[i];
      writeCellRecord(dir / "result.json", copy);
      std::ofstream(dir / o.logName()) << fmt::format(
          "the same run as cell {} (the same peers and settings, and no attacker or the "
          "same attack): its record copied\n",
          cells[first].name());
      records[i] = std::move(copy);
    }
    copies.erase(them);
  };
  const auto ended = [&](std::size_t i) {  // ran, or could not start
    ++finished;
    copyRecord(i);
  };
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (records.contains(i)) copyRecord(i);  // ran before (--resume)
  }
  spdlog::info("experiment: {} cells, {} to run ({} at a time){}, results under {}", cells.size(),
               todo.size(), o.jobs,
               same > 0 ? fmt::format(" and {} the same run as one of them", same) : "",
               out.string());

  Supervisor running;                          // keyed by cell index
  std::map<std::size_t, std::size_t> slot_of;  // cell index -> its port slot
  std::vector<bool> slot_busy(o.jobs, false);
  std::size_t next = 0;
  double spent = 0;
  std::size_t timed = 0;
  progress(finished, cells.size(), 0, o.jobs);
  // Ctrl-C or SIGTERM: running cells are interrupted (their launches tear down their peers),
  // no new ones start, and the results so far are written.
  catchInterrupts();
  bool forwarded = false;
  while (next < todo.size() || !running.empty()) {
    while (!interrupted() && next < todo.size() && running.size() < o.jobs) {
      const std::size_t i = todo[next++];
      const std::size_t slot =
          std::size_t(std::find(slot_busy.begin(), slot_busy.end(), false) - slot_busy.begin());
      // Each slot has its own port range: cells running side by side never collide.
      const auto base = std::uint16_t(o.base_port + slot * 500);
      const CellPlan plan = planCell(grid, cells[i], base);
      const fs::path dir = out / "cells" / cells[i].name();
      std::error_code made;
      fs::create_directories(dir, made);
      if (made) {
        // A full disk or a folder it may not write fails this cell, not the grid: no record,
        // reported as an error, run again by --resume.
        std::fprintf(stderr, "\n");
        spdlog::error("experiment: cell {}: cannot create {}: {}", cells[i].name(), dir.string(),
                      made.message());
        ended(i);
        continue;
      }
      std::ofstream(dir / "topology.yaml")
          << topologies::toYaml(plan.topology, "cell " + cells[i].name());
      std::vector<std::string> argv{o.phalanx,    std::string(kEngines.name(o.engine)),
                                    "--topology", (dir / "topology.yaml").string(),
                                    "--config",   fs::absolute(grid.config).string(),
                                    "--out",      (dir / "run").string()};
      if (o.engine == Engine::kLaunch) {
        argv.insert(argv.end(), {"--monitor-every", "5"});
      } else {
        // Cells side by side share the cores.
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        argv.insert(argv.end(),
                    {"--threads", std::to_string(std::max<std::size_t>(1, cores / o.jobs))});
      }
      if (!plan.byzantine.empty()) {
        argv.insert(argv.end(), {"--byzantine", fmt::format("{}", fmt::join(plan.byzantine, ",")),
                                 "--attack", plan.attack});
      }
      if (grid.rounds > 0) argv.insert(argv.end(), {"--rounds", std::to_string(grid.rounds)});
      for (const auto& s : plan.sets) argv.insert(argv.end(), {"--set", s});
      if (!running.spawn(i, argv, dir / o.logName())) {
        ended(i);  // no record: reported as an error, run again by --resume
        continue;
      }
      slot_busy[slot] = true;
      slot_of[i] = slot;
    }
    if (interrupted() && !forwarded) {
      std::fprintf(stderr, "\n");
      spdlog::warn("experiment: interrupted: stopping {} running cell(s); --resume runs the rest",
                   running.size());
      running.signalAll(SIGINT);  // each launch tears its peers down and writes its summary
      forwarded = true;
    }
    if (running.empty()) break;
    const auto exit = running.waitOne();
    if (!exit) continue;  // a signal: the loop above forwards it
    const std::size_t index = exit->key;
    slot_busy[slot_of[index]] = false;
    const double wall = exit->seconds;
    const int code = WIFEXITED(exit->status) ? WEXITSTATUS(exit->status) : -1;
    // An interrupted cell did not finish: "error", so --resume runs it again.
    const Ending ending = endingOf(exit->status);
    const CellStatus state = interrupted()                  ? CellStatus::kError
                             : ending == Ending::kCompleted ? CellStatus::kOk
                             : ending == Ending::kFailed    ? CellStatus::kFailed
                                                            : CellStatus::kError;
    const fs::path cell_dir = out / "cells" / cells[index].name();
    // The record holds the figures: the run folder may be gone by the time the grid is
    // reported again (runs are not kept between sessions).
    records[index] = {
        readCellResult(cells[index], cell_dir / "run", state, wall, plans[index].byzantine), code};
    writeCellRecord(cell_dir / "result.json", records[index]);
    if (state != CellStatus::kOk) {
      std::fprintf(stderr, "\n");
      spdlog::warn("experiment: cell {} {} (exit {}); see {}", cells[index].name(),
                   kCellStatuses.name(state), code,
                   (out / "cells" / cells[index].name() / o.logName()).string());
    }
    spent += wall;
    ++timed;
    ended(index);
    progress(finished, cells.size(), spent / double(timed), o.jobs);
  }

  std::vector<CellResult> results;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (records.contains(i)) {
      results.push_back(records[i].result);
    } else {  // interrupted before it ended: what its run folder holds, as an error
      results.push_back(readCellResult(cells[i], out / "cells" / cells[i].name() / "run",
                                       CellStatus::kError, 0.0, plans[i].byzantine));
    }
  }
  const bool all_ran = std::none_of(results.begin(), results.end(),
                                    [](const auto& r) { return r.status == CellStatus::kError; });
  if (!o.filters.empty()) {
    // A filtered run into a folder that holds other cells' records (a --resume of part of a
    // grid) reports the whole grid, in grid order, so that it does not hide what ran before;
    // cells outside the filter without a record are left out, not reported as not run.
    std::map<std::string, CellResult> mine;
    for (std::size_t i = 0; i < cells.size(); ++i) mine.emplace(cells[i].name(), results[i]);
    results.clear();
    for (const Cell& cell : expand(grid, {})) {
      if (auto at = mine.find(cell.name()); at != mine.end()) {
        results.push_back(std::move(at->second));
      } else if (auto r = readCellRecord(cell, out / "cells" / cell.name() / "result.json")) {
        results.push_back(std::move(r->result));
      }
    }
  }
  std::ofstream(out / "results.csv") << resultsCsv(grid, results);
  fs::create_directories(out / "plots");
  std::vector<std::string> names;
  for (const auto& [name, svg] : resultPlots(grid, results)) {
    std::ofstream(out / "plots" / name) << svg;
    names.push_back(name);
  }
  std::ofstream(out / "results.md") << resultsMarkdown(grid, results, names);
  if (o.json) {
    nlohmann::ordered_json j;
    j["files"] = {{"csv", (out / "results.csv").string()},
                  {"markdown", (out / "results.md").string()}};
    nlohmann::ordered_json plots = nlohmann::ordered_json::array();
    for (const auto& name : names) plots.push_back((out / "plots" / name).string());
    j["files"]["plots"] = std::move(plots);
    j["all_ran"] = all_ran && !interrupted();
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const CellResult& r : results) {
      nlohmann::ordered_json cell{{"name", r.cell.name()}};
      // The record's own writer (tools/cell_record.h): one format for a cell's figures.
      const auto record = nlohmann::ordered_json::parse(cellRecordJson({.result = r}));
      for (const auto& [k, v] : record.items()) cell[k] = v;
      cell.erase("exit_code");  // not kept past the cell's run
      list.push_back(std::move(cell));
    }
    j["cells"] = std::move(list);
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("results: {}\n         {}\n", (out / "results.csv").string(),
               (out / "results.md").string());
  }
  return all_ran && !interrupted() ? kExitOk : kExitFailure;
}

}  // namespace phalanx::tools
