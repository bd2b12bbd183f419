# cmake -DINPUT=FILE -DOUTPUT=FILE.cpp -DSYMBOL=NAME -P embed_file.cmake
# Writes a C++ source defining `std::string_view NAME()` that returns the bytes of INPUT,
# so that a file (the web page of `tessera serve`) is built into the binary.
file(READ "${INPUT}" hex HEX)
file(SIZE "${INPUT}" size)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
string(REGEX REPLACE "(('\\\\x[0-9a-f][0-9a-f]',){32})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_file.cmake; do not edit.\n"
  "#include <string_view>\n"
  "namespace {\nconst char kData[] = {\n${bytes}'\\0'};\n}  // namespace\n"
  "std::string_view ${SYMBOL}() { return {kData, ${size}}; }\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
