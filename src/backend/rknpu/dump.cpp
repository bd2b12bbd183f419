#include "backend/rknpu/dump.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "backend/rknpu/regcmd.h"

namespace tessera::rknpu {

namespace {
std::string safe(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return o.substr(0, 80);
}

Status write_file(const std::filesystem::path& p, const void* data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!f) return error(StatusCode::io_error, "TESSERA_DUMP=rknpu: cannot write ", p.string());
  return Status::Ok();
}
}  // namespace

bool dump_enabled() {
  const char* v = std::getenv("TESSERA_DUMP");
  return v && (std::strcmp(v, "rknpu") == 0 || std::strcmp(v, "all") == 0);
}

Status dump_program(const RknpuProgram& p, const std::map<TensorId, BoInfo>& bo_of, Transport* t, int64_t run) {
  const char* dir = std::getenv("TESSERA_DUMP_DIR");
  std::filesystem::path root = std::filesystem::path(dir ? dir : "rknpu_dump") / ("run" + std::to_string(run));
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) return error(StatusCode::io_error, "TESSERA_DUMP=rknpu: cannot create ", root.string(), ": ", ec.message());
  size_t task = 0;
  std::ofstream index(root / "index.txt");
  index << p.describe() << "\n";
  for (const auto& n : p.notes) index << "note: " << n << "\n";
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    for (size_t k = 0; k < p.jobs[j].tasks.size(); ++k, ++task) {
      const auto& e = p.task_entries[task];
      const CompiledOp& c = p.ops[p.jobs[j].tasks[k].first];
      std::string base = "job" + std::to_string(j) + "_task" + std::to_string(k);
      TS_RETURN_IF_ERROR(write_file(root / (base + ".regcmd"), e.data(), e.size() * sizeof(uint64_t)));
      std::ofstream txt(root / (base + ".txt"));
      txt << "# " << c.op.label << " tile " << p.jobs[j].tasks[k].second << " at 0x" << std::hex
          << p.job_descs[j].tasks[k].regcmd << std::dec << ", " << e.size() << " entries\n"
          << format_regcmd(e);
      index << base << ": " << c.op.label << "\n";
    }
  }
  for (const auto& [id, bo] : bo_of) {
    TS_RETURN_IF_ERROR(t->prep_bo(bo.handle));
    Status s = write_file(root / ("bo" + std::to_string(bo.handle) + "_" + safe(p.graph->tensor(id).name) + ".bin"), bo.cpu,
                          static_cast<size_t>(bo.size));
    TS_RETURN_IF_ERROR(t->fini_bo(bo.handle));
    TS_RETURN_IF_ERROR(s);
  }
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const CompiledOp& c = p.ops[i];
    for (const BoInfo* bo : {&c.weights, &c.bs}) {
      if (!bo->handle) continue;
      TS_RETURN_IF_ERROR(t->prep_bo(bo->handle));
      Status s = write_file(root / ("op" + std::to_string(i) + (bo == &c.weights ? "_weights.bin" : "_bs.bin")), bo->cpu,
                            static_cast<size_t>(bo->size));
      TS_RETURN_IF_ERROR(t->fini_bo(bo->handle));
      TS_RETURN_IF_ERROR(s);
    }
  }
  return Status::Ok();
}

}  // namespace tessera::rknpu
