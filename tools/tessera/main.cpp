// tessera: the command-line tool.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <stdexcept>

#include "cli.h"

int main(int argc, char** argv) {
  CLI::App app{"Tessera: an inference runtime for NPUs (native formats first)"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every command");
  tessera::cli::add_devices_command(app);
  tessera::cli::add_inspect_command(app);
  tessera::cli::add_run_command(app);
  tessera::cli::add_bench_command(app);
  tessera::cli::add_demo_command(app);
  tessera::cli::add_classify_command(app);
  tessera::cli::add_segment_command(app);
  tessera::cli::add_pose_command(app);
  tessera::cli::add_detect_command(app);
  tessera::cli::add_generate_command(app);
  tessera::cli::add_score_command(app);
  tessera::cli::add_chat_command(app);
  tessera::cli::add_chat_template_command(app);
  tessera::cli::add_tokenize_command(app);
  tessera::cli::add_perplexity_command(app);
  tessera::cli::add_gguf_synth_command(app);
  tessera::cli::add_convert_command(app);
  tessera::cli::add_quantize_command(app);
#if defined(TESSERA_HAS_SERVE)
  tessera::cli::add_serve_command(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tessera::cli::CommandFailed& f) {
    tessera::cli::end_progress_line();
    std::fprintf(stderr, "tessera: error: %s\n", f.status.to_string().c_str());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // e.what() names the operation and the paths.
    std::fprintf(stderr, "tessera: error: file system: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tessera: error: out of memory (an allocation failed)\n");
    return 1;
  } catch (const std::length_error& e) {
    std::fprintf(stderr, "tessera: error: a size is too large (%s)\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
