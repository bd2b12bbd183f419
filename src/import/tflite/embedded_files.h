// Files packed into a .tflite model, and the class names among them.
//
// TFLite's metadata keeps its "associated files" (a classifier's labels, a detector's label
// map) in a zip archive appended to the flatbuffer, so that the model file is also a zip;
// Ultralytics' exports put their metadata there the same way (temp_meta.txt: a Python dict
// literal whose 'names' maps class ids to names). The writers store the files uncompressed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera::tflite {

// A packed file: its name, and its bytes as a view into the data given to embedded_files
// (valid while those are; nothing is copied).
struct EmbeddedFile {
  std::string name;
  std::string_view bytes;
};

// Limits: files listed (later ones ignored), and bytes per file.
inline constexpr size_t kMaxEmbeddedFiles = 64;
inline constexpr size_t kMaxEmbeddedFileBytes = size_t{16} << 20;

// The stored (uncompressed) files of the zip archive at the end of `data`: none when there
// is no archive; an error naming the entry where the archive's records point outside the
// bytes or contradict each other. Compressed entries and entries over the size limit are
// skipped.
Result<std::vector<EmbeddedFile>> embedded_files(const uint8_t* data, size_t size);

// That archive (from its first local header to the end), its recorded offsets rewritten
// for a file where it starts at byte `position` (a rewritten model's flatbuffer ends
// there): empty when there is none; an error when its records contradict themselves.
Result<std::vector<uint8_t>> embedded_archive_moved(const uint8_t* data, size_t size, size_t position);

// Class names from a model's embedded files: the 'names' of an Ultralytics metadata file
// ({0: 'person', 1: 'bicycle', ...}: every id from 0 up, each once), else the lines of
// the first other text file (.txt), as TFLite Model Maker and TF Hub pack labels (a
// leading background line kept: a caller that knows the class count drops it). `source`
// gets the file's name. Empty when no file gives names.
std::vector<std::string> embedded_class_names(const std::vector<EmbeddedFile>& files, std::string* source = nullptr);

// Ultralytics' 'names' dict parsed from a metadata text; empty when absent or malformed
// (an id missing, repeated or out of order with the count, a string not closed).
std::vector<std::string> ultralytics_names(std::string_view text);

}  // namespace tessera::tflite
