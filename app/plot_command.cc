// `ember plot`: runs the Python package's plotting module (python/ember/plot.py) under the
// interpreter the package was built for, with the package on its path: the build tree's, or the
// one installed beside this binary (PREFIX/bin/ember, PREFIX/lib/python3/dist-packages).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/process_setup.h"

namespace ember::app {
namespace {

constexpr CommandText kPlotCommand = {
    .name = "plot",
    .summary = "draw training runs and benchmark results as PNG figures",
    .usage = "ember plot FILE... --out DIR [--labels A,B,...]",
    .description =
        "Draws run logs (train/cluster --log-jsonl) as loss.png, throughput.png and "
        "step_time.png (the time per step split into pull, compute, push and waiting), several "
        "runs on one figure, and `ember bench --json` results as bench.png against raw ZeroMQ. "
        "Runs the Python package's ember.plot with matplotlib (Debian: python3-matplotlib).",
};

void AddPlotFlags(CLI::App* command, PlotFlags* flags) {
  command->add_option("files", flags->files, "run logs and bench results")
      ->required()
      ->type_name("FILE");
  AddValue(command, "--out", &flags->out, "DIR", "where the PNG files go")->required();
  AddValue(command, "--labels", &flags->labels, "A,B,...",
           "one label per FILE (default: the files' names)");
}

}  // namespace

Command MakePlotCommand(CLI::App& ember) {
  return MakeCommand(ember, kPlotCommand, AddPlotFlags, RunPlot);
}

namespace {

namespace fs = std::filesystem;

// The folder holding the package `ember`, or empty.
std::string PackageParent() {
  std::vector<fs::path> candidates;
#ifdef EMBER_PYTHON_BUILD_DIR
  candidates.emplace_back(EMBER_PYTHON_BUILD_DIR);
#endif
  const std::string self = SelfExecutable();
  if (!self.empty()) {
    candidates.push_back(fs::path(self).parent_path().parent_path() / "lib" / "python3" /
                         "dist-packages");
  }
  for (const fs::path& candidate : candidates) {
    std::error_code error;
    if (fs::exists(candidate / "ember" / "plot.py", error)) return candidate.string();
  }
  return "";
}

}  // namespace

int RunPlot(const PlotFlags& flags) {
#ifndef EMBER_PYTHON_EXECUTABLE
  (void)flags;
  return PrintError("plot", FailedPrecondition("this ember was built without its Python module "
                                               "(pybind11 and python3-dev were not found)"));
#else
  const std::string package_parent = PackageParent();
  if (package_parent.empty()) {
    return PrintError("plot", NotFound("cannot find the Python package ember (ember/plot.py) "
                                       "in the build folder or beside this binary"));
  }
  const char* old_path = std::getenv("PYTHONPATH");
  const std::string path =
      package_parent + (old_path && *old_path ? ":" + std::string(old_path) : "");
  ::setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<std::string> args = {EMBER_PYTHON_EXECUTABLE, "-m", "ember.plot"};
  args.insert(args.end(), flags.files.begin(), flags.files.end());
  args.insert(args.end(), {"--out", flags.out});
  if (!flags.labels.empty()) args.insert(args.end(), {"--labels", flags.labels});
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  return PrintError("plot", Unavailable(std::string("cannot run ") + EMBER_PYTHON_EXECUTABLE +
                                        ": " + std::strerror(errno)));
#endif
}

}  // namespace ember::app
