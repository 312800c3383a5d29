// Writes the seed corpora of the fuzz targets (corpus_writer.h):
//   ember_fuzz_corpus OUT_DIR SOURCE_DIR
// writes OUT_DIR/<target>/<seed> (replacing files of the same name) and takes the example job
// configs from SOURCE_DIR/configs.
#include <cstdio>
#include <filesystem>

#include "fuzz/corpus_writer.h"
#include "fuzz/fuzz_support.h"

int main(int argc, char** argv) {
  using namespace ember::fuzz;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR SOURCE_DIR\n", argv[0]);
    return 2;
  }
  QuietLogs();
  CorpusWriter out{std::filesystem::path(argv[1])};
  WriteWireRequests(out);
  WriteWireResponses(out);
  WriteServerConversations(out);
  WriteSchedulerConversations(out);
  WritePartitionFiles(out, ScratchDir());
  WriteTrainerCheckpoints(out, ScratchDir());
  WriteManifests(out, ScratchDir());
  WriteConfigs(out, std::filesystem::path(argv[2]));
  WriteDelimited(out);
  WriteKeyLists(out);
  WriteMetricsRequests(out);
  WriteKeyFiles(out, ScratchDir() + "/keys");
  WritePushLogs(out, ScratchDir() + "/push-log");
  WriteSchedulerStates(out, ScratchDir());
  std::printf("wrote %d seeds under %s\n", out.written(), argv[1]);
  return 0;
}
