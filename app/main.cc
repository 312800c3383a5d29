// ember: the command-line entry point; parses the command line and runs the subcommand it names.
#include "app/command_flags.h"
#include "app/process_setup.h"

int main(int argc, char** argv) {
  ember::app::KeepLargeAllocationsInTheHeap();
  std::unique_ptr<CLI::App> ember = ember::app::MakeEmberApp();
  return ember::app::RunCommandLine(*ember, ember::app::AddCommands(*ember), argc, argv);
}
